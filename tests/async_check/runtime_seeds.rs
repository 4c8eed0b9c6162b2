//! What a choice string does not decide: the runtime seed. The `coin`
//! lock (tests/async_check.rs) flips an unbiased `select!` before it
//! takes the lock and, on one branch, holds without it. Under runtime
//! seed 0 both clients' draws keep them careful: the search is exhaustive
//! and finds nothing, as `check` said before it took a range of seeds. A
//! range of runtime seeds, a whole search each, finds the two holders
//! under seed 1; the counterexample's file names its seed and replays byte
//! for byte in a second process, and the same choices under seed 0 break
//! nothing. The careful lock holds under each of several seeds.

use super::{
    explore, one_loss, registry, replay, trace_in_a_second_process, trace_of, world, Bounds,
    Summary,
};
use zk_sim::explore::file::ChoiceFile;
use zk_sim::explore::{FaultAllowance, RuntimeSeeds};

fn explored(variant: &str, faults: FaultAllowance, seeds: &str) -> Summary {
    let scenario = world(variant)
        .scenario(registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let bounds = Bounds {
        faults,
        runtime_seeds: RuntimeSeeds::parse(seeds).expect("seeds"),
        ..Bounds::default()
    };
    explore(&scenario, &bounds).expect("a deterministic world")
}

#[test]
fn seed_0_alone_misses_the_coin_and_a_range_of_seeds_finds_it() {
    let alone = explored("coin", FaultAllowance::default(), "0");
    assert!(alone.found.is_empty(), "{alone:?}");
    assert!(alone.exhaustive, "{alone:?}");
    assert_eq!((alone.executions, alone.seeds_searched), (28, 1));

    let range = explored("coin", FaultAllowance::default(), "0..8");
    let found: Vec<(&str, u64)> = range
        .found
        .iter()
        .map(|f| (f.property.as_str(), f.runtime_seed))
        .collect();
    assert_eq!(
        found,
        vec![("fenced_mutual_exclusion", 1), ("mutual_exclusion", 1)],
        "{range:?}"
    );
    assert_eq!(range.found[0].choices, Vec::<u32>::new(), "the default run");
    // Seed 0's whole search, then seed 1's first execution; seeds 2..8
    // not searched, so the range is not exhaustive.
    assert_eq!((range.executions, range.seeds_searched), (29, 2));
    assert!(!range.exhaustive);
}

/// The coin's counterexample as `check` writes it: its runtime seed in.
fn coin_counterexample() -> ChoiceFile {
    let summary = explored("coin", FaultAllowance::default(), "0..8");
    let found = &summary.found[0];
    ChoiceFile {
        runtime_seed: found.runtime_seed,
        ..world("coin").choice_file(
            FaultAllowance::default(),
            Some(found.property.clone()),
            found.choices.clone(),
        )
    }
}

#[test]
fn a_counterexample_replays_under_its_runtime_seed_in_a_second_process() {
    let file = coin_counterexample();
    assert_eq!(file.runtime_seed, 1);
    let (_, report) = replay(registry().sim_recipes(), &file).expect("a run");
    assert!(
        report
            .violations
            .iter()
            .any(|v| v.property_name() == "mutual_exclusion"),
        "{:?}",
        report.violations
    );
    let here = trace_of(&file);
    assert_eq!(here, trace_in_a_second_process(&file, "coin"));
    // The same choices under seed 0: both careful, nothing broken.
    let seed_0 = ChoiceFile {
        runtime_seed: 0,
        ..file
    };
    let (_, report) = replay(registry().sim_recipes(), &seed_0).expect("a run");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}

#[test]
fn the_careful_lock_holds_under_each_of_several_runtime_seeds() {
    let summary = explored("fixed", one_loss(), "0..3");
    assert!(summary.found.is_empty(), "{summary:?}");
    assert!(summary.exhaustive, "{summary:?}");
    assert_eq!(summary.seeds_searched, 3);
    // Three times the_fixed_lock_holds_exhaustively's search (1,718
    // executions, 423 pruned): nothing the careful lock does depends on
    // what the seed decides (session ids differ, the tree does not).
    assert_eq!(
        (summary.executions, summary.pruned, summary.delay_bound),
        (3 * 1718, 3 * 423, 5),
        "{summary:?}"
    );
}
