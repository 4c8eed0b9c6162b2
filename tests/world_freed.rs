//! A finished run frees its world: the bytes still allocated after 200
//! more seeds of a scenario are what they were before (give or take the
//! run's bounded caches). A sweep's memory must not grow with its seeds;
//! the world's tasks and the world hold each other, and before the runner
//! broke that cycle every seed leaked its world (about 100 KB a seed, 20 MB
//! over these 200 seeds). Counted by this test binary's own allocator, in
//! live bytes: no resident-set size, no clock (the figures of a long sweep
//! are in BENCHMARKS.md, "Sweep memory and seeds").

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicIsize, Ordering};
use zk_sim::scenario::Scenario;

/// The system allocator, counting the bytes allocated and not yet freed.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live bytes after running `seeds` of `file` (one thread, no trace).
fn live_after(scenario: &Scenario, seeds: std::ops::Range<u64>) -> isize {
    let runner = scenario.runner();
    for seed in seeds {
        let report = runner.run(seed, false);
        std::hint::black_box(report);
    }
    drop(runner);
    LIVE.load(Ordering::Relaxed)
}

fn scenario(file: &str) -> Scenario {
    let registry = zk_models::Registry::builtin();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).expect("a shipped scenario");
    Scenario::parse(&path, &text, registry.sim_recipes()).expect("a valid scenario")
}

/// At most this many bytes may stay behind over 200 seeds (1 KB a seed:
/// a leaked world is ~100 KB).
const SLACK: isize = 200 * 1024;

#[test]
fn runs_free_their_worlds_passing_or_failing() {
    for file in [
        "scenarios/lock-fixed.toml",
        "scenarios/lock-original.toml",
        "scenarios/ensemble/lock-fixed-ensemble.toml",
    ] {
        let scenario = scenario(file);
        let before = live_after(&scenario, 0..20);
        let after = live_after(&scenario, 20..220);
        assert!(
            after - before < SLACK,
            "{file}: {} bytes more are allocated after 200 more seeds (a run's world is not freed)",
            after - before
        );
    }
}
