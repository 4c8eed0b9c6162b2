//! Helpers shared by the model tests: run a registered model with BFS and read
//! the verdicts; count the steps of a hand-written stepper reproduction at
//! the model's granularity.

#![allow(dead_code)]

use zk_models::run::{CheckReport, RunOptions, Strategy, Verdict};
use zk_models::Registry;
use zk_models::Setup;
use zk_recipes::{Observe, Recipe};
use zk_sim::stepper::{ClientId, Stepper};

/// Runs `recipe`/`variant` with `clients` clients and `faults`, BFS, one thread.
pub fn check(recipe: &str, variant: &str, clients: usize, faults: &str) -> CheckReport {
    check_with(
        recipe,
        variant,
        Setup::new(clients).with_faults(faults.parse().expect("fault spec")),
        None,
    )
}

/// As [`check`] with a full setup and an optional depth bound.
pub fn check_with(
    recipe: &str,
    variant: &str,
    setup: Setup,
    max_depth: Option<usize>,
) -> CheckReport {
    let entry = Registry::builtin()
        .model(recipe, variant)
        .expect("a registered model");
    entry.check(
        &setup,
        &RunOptions {
            strategy: Strategy::Bfs,
            threads: 1,
            max_depth,
            timeout: None,
            progress_every: None,
            memory_budget: None,
        },
    )
}

/// Exhausts `recipe`/`variant` with DFS on two threads: the fastest way
/// to show that every property holds (paths are not shortest).
pub fn check_exhaustively(recipe: &str, variant: &str, setup: Setup) -> CheckReport {
    let entry = Registry::builtin()
        .model(recipe, variant)
        .expect("a registered model");
    entry.check(
        &setup,
        &RunOptions {
            strategy: Strategy::Dfs,
            threads: 2,
            max_depth: None,
            timeout: None,
            progress_every: None,
            memory_budget: None,
        },
    )
}

/// The length of the counterexample of a violated property.
pub fn counterexample_steps(report: &CheckReport, property: &str) -> usize {
    let result = report
        .property(property)
        .unwrap_or_else(|| panic!("no property {property}"));
    assert_eq!(
        result.verdict,
        Verdict::Violated,
        "{property} should be violated\n{}",
        report.summary()
    );
    result.trace.as_ref().expect("a counterexample").len()
}

/// Every property holds (no violation, every example found).
pub fn assert_all_hold(report: &CheckReport) {
    assert!(report.failures().is_empty(), "{}", report.summary());
}

/// A stepper that counts the steps of a reproduction the way the model
/// counts them: a call, a send, a delivery, a timer, a fault, a reconnect
/// are one step each; `expire` (server expiry and the client learning it) is
/// two, since the model has the client learn in a step of its own.
pub struct Counting<R: Recipe> {
    pub stepper: Stepper<R>,
    pub steps: usize,
    clients: usize,
}

impl<R: Recipe<Outcome: Observe>> Counting<R> {
    pub fn new(stepper: Stepper<R>) -> Self {
        Counting {
            stepper,
            steps: 0,
            clients: 0,
        }
    }

    pub fn add_client(&mut self, recipe: R, session_id: i64) -> ClientId {
        self.clients += 1;
        self.stepper.add_client(recipe, session_id)
    }

    pub fn call(&mut self, client: ClientId, call: R::Call) {
        self.stepper.call(client, call);
        self.steps += 1;
    }

    pub fn step(&mut self, client: ClientId) -> bool {
        let moved = self.stepper.step(client);
        self.steps += usize::from(moved);
        moved
    }

    pub fn send(&mut self, client: ClientId) -> bool {
        let moved = self.stepper.send(client);
        self.steps += usize::from(moved);
        moved
    }

    pub fn deliver(&mut self, client: ClientId) -> bool {
        let moved = self.stepper.deliver(client);
        self.steps += usize::from(moved);
        moved
    }

    pub fn run_client(&mut self, client: ClientId) {
        while self.step(client) {}
    }

    /// Round robin until nobody moves, as `Stepper::run`.
    pub fn run(&mut self) {
        loop {
            let mut moved = false;
            for client in 0..self.clients {
                moved |= self.step(client);
            }
            if !moved {
                return;
            }
        }
    }

    pub fn apply_then_disconnect(&mut self, client: ClientId) {
        assert!(self.stepper.apply_then_disconnect(client));
        self.steps += 1;
    }

    pub fn reconnect(&mut self, client: ClientId) {
        self.stepper.reconnect(client);
        self.steps += 1;
    }

    pub fn expire_on_server(&mut self, client: ClientId) {
        self.stepper.expire_on_server(client);
        self.steps += 1;
    }

    pub fn expire(&mut self, client: ClientId) {
        self.stepper.expire(client);
        self.steps += 2;
    }

    /// Steps `client` until its next request matches `wanted`.
    pub fn advance_until(
        &mut self,
        client: ClientId,
        wanted: impl Fn(&zk_recipes::zk::Request) -> bool,
    ) {
        while !self
            .stepper
            .client(client)
            .outgoing
            .front()
            .is_some_and(|(_, request, _)| wanted(request))
        {
            assert!(
                self.step(client),
                "c{client} went quiet\n{}",
                self.stepper.trace()
            );
        }
    }
}
