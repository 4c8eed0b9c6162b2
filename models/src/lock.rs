//! Model of the exclusive lock (seed 000's `WriteLock`, `zk_recipes::lock`).
//!
//! Protocol: each contender creates an EPHEMERAL_SEQUENTIAL child of
//! `/locks`, lists the children and holds the lock when its node is first;
//! otherwise it watches the node before its own and looks again when that
//! watch fires. Unlock deletes the node.
//!
//! Configuration: `/locks` exists (persistent); every client calls `Lock`,
//! then `Unlock` if it got the lock, once per cycle (`Setup::cycles`, 1 by
//! default). Fixed clients get unique ids 1..=N.
//!
//! Properties: mutual exclusion (live holders), fenced mutual exclusion,
//! FIFO fairness by sequence number, herd bound 1, no leaked nodes, no stuck
//! waiter, the workload eventually completes; examples: the lock is
//! acquired, the workload can complete and, with expiry in the budget, a
//! stale holder overlaps a live one (known bug 8, harmless with fencing).
//!
//! Known bugs of `original` in reach: 1 (prefix ordering: two holders, FIFO),
//! 3 (recovered id is a bare name: stuck waiter, leaked node).

use crate::model::{ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::properties::{self, names};
use crate::setup::Setup;
use crate::workload::{self, WorkStep};
use stateright::Property;
use zk_recipes::lock::{FixedLock, LockCall, OriginalLock};
use zk_recipes::rename::RenameRecipe;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};

/// The lock directory.
pub const LOCK_DIR: &str = "/locks";

fn lock_dir() -> Path {
    Path::new(LOCK_DIR).expect("valid path")
}

/// Every client: lock, then unlock if it holds the lock, `cycles` times.
fn workload(cycles: usize) -> Vec<WorkStep<LockCall>> {
    workload::hold_cycles(LockCall::Lock, LockCall::Unlock, cycles)
}

fn setup_requests() -> Vec<Request> {
    vec![Request::Create {
        path: lock_dir(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    }]
}

fn oracles() -> Oracles {
    Oracles {
        herd_bound: Some(1),
        fifo_parent: Some(lock_dir()),
        ..Oracles::default()
    }
}

/// The properties every exclusive lock model checks.
pub fn lock_properties<R: ModelRecipe>(setup: &Setup) -> Vec<Property<RecipeModel<R>>> {
    let mut list = vec![
        properties::mutual_exclusion(names::MUTUAL_EXCLUSION),
        properties::fenced_mutual_exclusion(),
        properties::fifo(),
        properties::herd(),
        properties::no_leaks(),
        properties::no_stuck_waiter(),
        properties::liveness(),
        properties::acquired(names::LOCK_ACQUIRED),
        properties::workload_can_complete(),
    ];
    list.extend(properties::expiry_examples(setup));
    list
}

fn build<R: ModelRecipe<Call = LockCall> + RenameRecipe>(
    variant: &str,
    setup: &Setup,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let clients = ClientSpec::many(setup.clients, recipe, |_| workload(setup.cycles));
    RecipeModel::new(
        format!("lock/{variant}"),
        &setup_requests(),
        clients,
        setup.faults,
        oracles(),
    )
    .with_setup(setup)
    .with_renaming()
    .with_properties(lock_properties(setup))
}

/// Seed 000's `WriteLock`, bugs included.
pub fn original(setup: &Setup) -> RecipeModel<OriginalLock> {
    build("original", setup, |_| OriginalLock::new(lock_dir()))
}

/// The corrected lock.
pub fn fixed(setup: &Setup) -> RecipeModel<FixedLock> {
    build("fixed", setup, |c| FixedLock::new(lock_dir(), c as u64 + 1))
}

/// The corrected lock without the sync before its recovery read.
pub fn unsynced(setup: &Setup) -> RecipeModel<FixedLock> {
    build("unsynced", setup, |c| {
        FixedLock::without_recovery_sync(lock_dir(), c as u64 + 1)
    })
}
