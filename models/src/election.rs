//! Model of leader election (seed 003; `zk_recipes::election`).
//!
//! Protocol: every contender creates an EPHEMERAL_SEQUENTIAL node under
//! `/leader`; the smallest sequence leads; the others wait for a change (the
//! original: a child watch on the whole list; fixed: the predecessor only).
//! Resigning deletes the node.
//!
//! Configuration: `/leader` exists; every client volunteers and resigns if
//! it was elected, once per cycle. Unique ids are 1..=N.
//!
//! Properties: `one_leader` (live leaders), fenced, FIFO by sequence, herd
//! bound 1, no leaked nodes, no stuck waiter, liveness; examples: a leader is
//! elected, the workload can complete, and with expiry a stale leader
//! overlaps a live one. Known bugs of `original` in reach: 4 (herd, with 3
//! clients), 2 (blind create retry: orphan node, no leader).

use crate::model::{ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::properties::{self, names};
use crate::setup::Setup;
use crate::workload::{self, WorkStep};
use stateright::Property;
use zk_recipes::election::{ElectionCall, FixedElection, OriginalElection};
use zk_recipes::rename::RenameRecipe;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};

/// The election parent.
pub const PARENT: &str = "/leader";

fn parent() -> Path {
    Path::new(PARENT).expect("valid path")
}

fn workload(cycles: usize) -> Vec<WorkStep<ElectionCall>> {
    workload::hold_cycles(ElectionCall::Volunteer, ElectionCall::Resign, cycles)
}

fn election_properties<R: ModelRecipe>(setup: &Setup) -> Vec<Property<RecipeModel<R>>> {
    let mut list = vec![
        properties::mutual_exclusion(names::ONE_LEADER),
        properties::fenced_mutual_exclusion(),
        properties::fifo(),
        properties::herd(),
        properties::no_leaks(),
        properties::no_stuck_waiter(),
        properties::liveness(),
        properties::acquired(names::LEADER_ELECTED),
        properties::workload_can_complete(),
    ];
    list.extend(properties::expiry_examples(setup));
    list
}

fn build<R: ModelRecipe<Call = ElectionCall> + RenameRecipe>(
    variant: &str,
    setup: &Setup,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let setup_requests = [Request::Create {
        path: parent(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    }];
    let oracles = Oracles {
        herd_bound: Some(1),
        fifo_parent: Some(parent()),
        ..Oracles::default()
    };
    let clients = ClientSpec::many(setup.clients, recipe, |_| workload(setup.cycles));
    RecipeModel::new(
        format!("election/{variant}"),
        &setup_requests,
        clients,
        setup.faults,
        oracles,
    )
    .with_setup(setup)
    .with_renaming()
    .with_properties(election_properties(setup))
}

/// Seed 003's election, bugs included.
pub fn original(setup: &Setup) -> RecipeModel<OriginalElection> {
    build("original", setup, |_| OriginalElection::new(parent()))
}

/// Predecessor watch, unique id, owner check.
pub fn fixed(setup: &Setup) -> RecipeModel<FixedElection> {
    build("fixed", setup, |c| {
        FixedElection::new(parent(), c as u64 + 1)
    })
}
