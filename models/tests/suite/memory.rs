//! Memory budgets (issue 30, class 6): every search stops at its budget as
//! at a timeout (not exhaustive, the reason kept), and a budget the search
//! stays inside changes nothing.

use zk_models::lasso::{LassoOptions, LassoVerdict, Limit};
use zk_models::memory::MemoryBudget;
use zk_models::run::{RunOptions, Stop, Strategy};
use zk_models::{Registry, Setup};

/// The 3-client lock with a loss and an expiry: 13.7 M states.
fn big_setup() -> Setup {
    Setup::new(3).with_faults("connection-loss=1,expiry=1".parse().unwrap())
}

fn tiny_budget() -> MemoryBudget {
    MemoryBudget::of_bytes(1 << 20)
}

#[test]
fn bfs_and_dfs_stop_at_their_memory_budget() {
    let model = Registry::builtin().model("lock", "fixed").unwrap();
    for strategy in [Strategy::Bfs, Strategy::Dfs] {
        let options = RunOptions {
            strategy,
            threads: 2,
            memory_budget: Some(tiny_budget()),
            ..RunOptions::default()
        };
        let report = model.check(&big_setup(), &options);
        assert!(!report.exhaustive, "{strategy:?}");
        let Some(Stop::Memory(stop)) = report.stop else {
            panic!("{strategy:?}: {:?}", report.stop);
        };
        assert_eq!(stop.budget, tiny_budget());
        assert!(stop.in_use_bytes >= tiny_budget().stop_point_bytes());
        assert_eq!(report.stop.map(|s| s.reason()), Some("memory"));
        assert!(
            report.summary().contains(&format!(
                "not exhaustive: memory budget of 1.0 MiB reached after {} states",
                report.unique_states
            )),
            "{}",
            report.summary()
        );
        assert!(report.failures().is_empty(), "{}", report.summary());
    }
}

#[test]
fn the_lasso_search_stops_at_its_memory_budget() {
    let options = LassoOptions {
        memory_budget: Some(tiny_budget()),
        ..LassoOptions::default()
    };
    let report = Registry::builtin()
        .model("lock", "fixed")
        .unwrap()
        .lasso(&big_setup(), &options);
    let LassoVerdict::Inconclusive(Limit::Memory(stop)) = report.verdict() else {
        panic!("{:?}\n{}", report.verdict(), report.summary());
    };
    assert_eq!(stop.budget, tiny_budget());
    assert_eq!(Limit::Memory(stop).reason(), "memory");
    assert!(
        report
            .summary()
            .contains("not exhaustive: memory budget of 1.0 MiB reached after"),
        "{}",
        report.summary()
    );
}

#[test]
fn a_search_inside_its_budget_is_exhaustive() {
    let setup = Setup::new(2).with_faults("connection-loss=1".parse().unwrap());
    let model = Registry::builtin().model("lock", "fixed").unwrap();
    for strategy in [Strategy::Bfs, Strategy::Dfs] {
        let options = RunOptions {
            strategy,
            memory_budget: Some(MemoryBudget::for_this_process()),
            ..RunOptions::default()
        };
        let report = model.check(&setup, &options);
        assert!(report.exhaustive && report.stop.is_none(), "{strategy:?}");
    }
    let lasso = model.lasso(&setup, &LassoOptions::default());
    assert_eq!(
        lasso.verdict(),
        LassoVerdict::NoLivelock,
        "{}",
        lasso.summary()
    );
}
