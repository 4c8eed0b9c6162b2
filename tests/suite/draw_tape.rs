//! The draw tape (sim/src/world/draws.rs): a seed's run recorded as every
//! word its streams drew replays byte for byte from the tape alone (its
//! streams' generators seeded from another seed, so a draw that did not
//! come from the tape would show), recording does not change a run, a
//! changed word gives another run of the same world, and the command line
//! writes a tape file that a second process replays with the same trace.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::{builtin, scratch, shipped_scenarios, zkcheck};
use std::path::{Path, PathBuf};
use zk_sim::scenario::{Runner, Scenario};
use zk_sim::world::draws::{self, DrawRequest, DrawTape};
use zk_sim::world::RunReport;

/// One run of `seed` with `request` installed; its report and what it drew.
fn run_with(runner: &dyn Runner, seed: u64, request: DrawRequest) -> (RunReport, DrawTape) {
    draws::install(request);
    let report = runner.run(seed, true);
    let drawn = draws::collect().unwrap_or_default();
    (report, drawn)
}

/// Records `seed`'s run, checks that recording changed nothing, and replays
/// the tape with every stream's generator seeded from another seed: the
/// same trace, and every word of the tape drawn, none past it.
pub fn replays_exactly_from_its_tape(runner: &dyn Runner, seed: u64, what: &str) {
    let plain = runner.run(seed, true);
    let (recorded, tape) = run_with(
        runner,
        seed,
        DrawRequest {
            record: true,
            ..DrawRequest::default()
        },
    );
    assert!(tape.words() > 0, "{what} seed {seed}: nothing drawn");
    assert_eq!(
        plain.trace.first_divergence(&recorded.trace),
        None,
        "{what} seed {seed}: recording changed the run"
    );
    let elsewhere = DrawRequest {
        stream_seed: Some(seed ^ 0x005e_ed0f_7a9e),
        ..DrawRequest::default()
    };
    let (unscripted, _) = run_with(runner, seed, elsewhere);
    assert_ne!(
        recorded.trace.first_divergence(&unscripted.trace),
        None,
        "{what} seed {seed}: the streams' seed changes nothing, so the replay below proves nothing"
    );
    let (replayed, redrawn) = run_with(
        runner,
        seed,
        DrawRequest {
            script: Some(tape.clone()),
            record: true,
            stream_seed: Some(seed ^ 0x005e_ed0f_7a9e),
            coverage: false,
        },
    );
    assert_eq!(
        recorded.trace.first_divergence(&replayed.trace),
        None,
        "{what} seed {seed}: the tape's run differs (a draw came from elsewhere)"
    );
    assert_eq!(
        redrawn, tape,
        "{what} seed {seed}: the replay drew other words"
    );
}

#[test]
fn every_shipped_scenario_replays_from_its_tape_alone() {
    let files = shipped_scenarios();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunks: Vec<&[PathBuf]> = files.chunks(files.len().div_ceil(workers)).collect();
    std::thread::scope(|scope| {
        for chunk in chunks {
            scope.spawn(move || {
                for file in chunk {
                    let scenario = Scenario::load(file, builtin()).unwrap();
                    let runner = scenario.runner();
                    for seed in 0..4 {
                        let what = file.display().to_string();
                        replays_exactly_from_its_tape(runner.as_ref(), seed, &what);
                    }
                }
            });
        }
    });
}

fn lock_scenario() -> Scenario {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/lock-fixed.toml");
    Scenario::load(&file, builtin()).unwrap()
}

#[test]
fn a_changed_word_is_another_run_of_the_same_world() {
    let runner = lock_scenario().runner();
    let record = DrawRequest {
        record: true,
        ..DrawRequest::default()
    };
    let (recorded, mut tape) = run_with(runner.as_ref(), 3, record);
    // Every message as fast as the latency range allows.
    let net = tape.streams.get_mut("net").expect("latencies drawn");
    net.iter_mut().for_each(|word| *word = 0);
    let changed = DrawRequest {
        script: Some(tape.clone()),
        record: false,
        stream_seed: None,
        coverage: false,
    };
    let (first, _) = run_with(runner.as_ref(), 3, changed.clone());
    let (second, _) = run_with(runner.as_ref(), 3, changed);
    assert_ne!(recorded.trace.first_divergence(&first.trace), None);
    assert_eq!(first.trace.first_divergence(&second.trace), None);
    let fastest = first.trace.lines.iter().map(ToString::to_string);
    let sends: Vec<String> = fastest.filter(|line| line.contains("deliver")).collect();
    assert!(!sends.is_empty(), "no delivery in the changed run");
}

#[test]
fn a_seed_written_as_a_tape_replays_with_the_same_trace_in_another_process() {
    let dir = scratch("draw_tape", "cli");
    let tape = dir.join("seed-5.toml");
    let tape_arg = tape.to_str().unwrap();
    let scenario = "scenarios/bugs/bug6-queue-lost-item.toml";
    let seeded = zkcheck(&["replay", scenario, "--seed", "5", "--write-tape", tape_arg]);
    let replayed = zkcheck(&["replay", tape_arg]);
    assert_eq!(seeded.code, replayed.code, "{}", replayed.stderr);
    let trace = |stdout: &str| -> String {
        let lines = stdout.lines();
        let kept = lines.filter(|l| !l.starts_with("tape: ") && !l.starts_with("replay: "));
        kept.map(|l| l.replace(" (tape, seed 5)", " (seed 5)") + "\n")
            .collect()
    };
    assert!(seeded.stdout.lines().count() > 50, "{}", seeded.stdout);
    assert_eq!(trace(&seeded.stdout), trace(&replayed.stdout));
    assert!(
        replayed.stdout.contains("tape: every one of its "),
        "{}",
        replayed.stdout
    );
    assert!(
        seeded.stderr.contains("zkcheck replay"),
        "{}",
        seeded.stderr
    );
    // A tape replays one exact run: a flag that would pick another is refused.
    zkcheck(&["replay", tape_arg, "--seed", "1"])
        .expect(2)
        .refused(&["--seed", tape_arg, "does not apply"]);
    // A bad word is refused naming the file, the line and the stream.
    let text = std::fs::read_to_string(&tape).unwrap();
    let net = text.find("\nnet = '''\n").expect("a net stream") + "\nnet = '''\n".len();
    let broken = format!("{}zz{}", &text[..net], &text[net + 2..]);
    std::fs::write(&tape, broken).unwrap();
    zkcheck(&["replay", tape_arg])
        .expect(2)
        .refused(&[tape_arg, "draws.net", "not a word"]);
}

#[test]
fn a_fault_site_is_the_word_that_decides_its_requests_fault() {
    let runner = lock_scenario().runner();
    let record = DrawRequest {
        record: true,
        coverage: true,
        ..DrawRequest::default()
    };
    let (recorded, mut tape) = run_with(runner.as_ref(), 3, record);
    let coverage = recorded.coverage.as_ref().expect("coverage kept");
    let [lose_request, lose_reply] = coverage.loss_words;
    assert!(
        0 < lose_request && lose_request < lose_reply,
        "{lose_request} {lose_reply}"
    );
    let faults = tape
        .streams
        .get_mut("faults")
        .expect("request faults drawn");
    let sites = &coverage.fault_sites;
    assert!(sites.len() > 100, "{} sites", sites.len());
    assert!(sites.windows(2).all(|pair| pair[0].word < pair[1].word));
    assert!(sites.last().is_some_and(|site| site.word < faults.len()));
    // The tenth request that drew no fault now loses its reply.
    let quiet: Vec<usize> = sites
        .iter()
        .map(|site| site.word)
        .filter(|&word| faults[word] >= lose_reply)
        .collect();
    faults[quiet[10]] = lose_request;
    let struck = DrawRequest {
        script: Some(tape),
        ..DrawRequest::default()
    };
    let (changed, _) = run_with(runner.as_ref(), 3, struck);
    let divergence = recorded
        .trace
        .first_divergence(&changed.trace)
        .expect("another run");
    assert!(divergence.contains("lost after apply"), "{divergence}");
}
