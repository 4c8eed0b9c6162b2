//! `check --servers 2`: a leader and a follower that applies the committed
//! log when the checker chooses (within the `--lag` budget).

mod common;

use common::check_with;
use zk_models::run::Verdict;
use zk_models::Registry;
use zk_models::Setup;

fn two_servers(faults: &str) -> Setup {
    Setup::new(2)
        .with_faults(faults.parse().unwrap())
        .with_servers(2)
}

#[test]
fn probe() {
    for (recipe, variant) in [("lock", "fixed"), ("lock", "original")] {
        for faults in ["none", "connection-loss=1"] {
            let t = std::time::Instant::now();
            let report = check_with(recipe, variant, two_servers(faults), None);
            eprintln!("PROBE {recipe}/{variant} {faults}: {:.2}s\n{}", t.elapsed().as_secs_f64(), report.summary());
            let entry = Registry::builtin().model(recipe, variant).unwrap();
            for property in &report.properties {
                if property.verdict != Verdict::Violated {
                    continue;
                }
                let schedule = report.schedule(property).unwrap();
                eprintln!("{}", zk_models::run::render_trace(property.trace.as_ref().unwrap()));
                let replayed = entry.replay(&schedule).unwrap();
                eprintln!("  replay {}: agrees {} {:?}", property.name, replayed.agrees(), replayed.signatures());
            }
        }
    }
}
