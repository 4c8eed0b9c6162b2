//! `sweep --coverage` (issue 44): the abstract states and steps a sweep's
//! runs reached, each with its lowest seed, and the curve of new states
//! per block of seeds. The same on one worker or two; a sweep's shards
//! merge to the whole sweep's coverage; a merge with a shard that kept
//! none has none; the fixed lock at 2 clients reaches a pinned number of
//! states, most of them in its first block of seeds.

use crate::common::{self, zkcheck};
use serde_json::Value;
use std::path::Path;

const TWO_CLIENTS: &str = "tests/fixtures/lock-fixed-two-clients.toml";

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `sweep TWO_CLIENTS --seeds 0..2000 --coverage` with `extra`, its JSON.
fn swept(dir: &Path, name: &str, extra: &[&str]) -> (Value, String) {
    let json = dir.join(format!("{name}.json"));
    let json_text = json.display().to_string();
    let mut args = vec![
        "sweep",
        TWO_CLIENTS,
        "--seeds",
        "0..2000",
        "--json",
        &json_text,
    ];
    args.extend(extra);
    let run = zkcheck(&args);
    run.expect(0);
    (read_json(&json), run.stdout)
}

#[test]
fn coverage_is_the_same_on_any_number_of_workers_and_pinned() {
    let dir = common::scratch("coverage", "workers");
    let (one, stdout) = swept(&dir, "one", &["--jobs", "1", "--coverage"]);
    let (two, _) = swept(&dir, "two", &["--jobs", "2", "--coverage"]);
    let (without, plain) = swept(&dir, "without", &["--jobs", "2"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(one["coverage"], two["coverage"]);
    let coverage = &one["coverage"];
    assert_eq!(
        (
            coverage["states"].as_u64(),
            coverage["transitions"].as_u64()
        ),
        (Some(869), Some(1632))
    );
    let news: Vec<u64> = coverage["curve"]
        .as_array()
        .expect("a curve")
        .iter()
        .map(|block| block["new_states"].as_u64().expect("a count"))
        .collect();
    assert_eq!(news, vec![412, 92, 72, 47, 62, 35, 48, 47, 17, 37]);
    assert_eq!(news.iter().sum::<u64>(), 869, "every state in one block");
    assert!(
        stdout.contains(
            "coverage: 869 abstract states, 1632 steps between them, 153 client features"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("  new states per 200 seeds: 412, 92, "),
        "{stdout}"
    );
    assert!(without.get("coverage").is_none(), "kept only when asked");
    assert_eq!(
        one["requests"], without["requests"],
        "keeping it changes no run"
    );
    assert!(!plain.contains("coverage:"), "{plain}");
}

#[test]
fn shards_merge_to_the_whole_sweeps_coverage() {
    let dir = common::scratch("coverage", "shards");
    let (whole, _) = swept(&dir, "whole", &["--jobs", "2", "--coverage"]);
    for k in 0..2 {
        let shard = format!("{k}/2");
        swept(
            &dir,
            &format!("shard-{k}"),
            &["--jobs", "2", "--coverage", "--shard", &shard],
        );
    }
    let merged = dir.join("merged.json").display().to_string();
    let shard = |k: u32| dir.join(format!("shard-{k}.json")).display().to_string();
    let run = zkcheck(&["merge", &shard(1), &shard(0), "--json", &merged]);
    run.expect(0);
    assert!(
        run.stdout.contains("coverage: 869 abstract states"),
        "{}",
        run.stdout
    );
    let merged = read_json(Path::new(&merged));
    assert_eq!(merged["coverage"], whole["coverage"]);
    // A shard without its coverage: the merge has none, and says so.
    swept(&dir, "shard-1", &["--jobs", "2", "--shard", "1/2"]);
    let run = zkcheck(&["merge", &shard(0), &shard(1)]);
    let _ = std::fs::remove_dir_all(&dir);
    run.expect(0);
    assert!(!run.stdout.contains("coverage:"), "{}", run.stdout);
    assert!(
        run.stderr.contains("1 of 2 shard(s) kept their coverage"),
        "{}",
        run.stderr
    );
}
