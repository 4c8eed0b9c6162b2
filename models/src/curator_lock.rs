//! Model of the Curator-style lock (`InterProcessMutex`, seeds 002 and 004;
//! `zk_recipes::curator_lock`).
//!
//! Protocol: make sure `/locks/order-17` exists, create a protected
//! EPHEMERAL_SEQUENTIAL `_c_<id>-lock-` under it, read the children sorted
//! by sequence; first means acquired, else getData with a watch on the node
//! just before ours and wait. Release deletes the node.
//!
//! Configuration: nothing exists beforehand (the recipe creates the lock
//! path); every client acquires without timeout, then releases if it got
//! the lock, once per cycle. Unique ids are 1..=N. The recipes create the
//! parents (the fixed one as containers, which the server may reap once
//! empty: a client then finds its parent gone and creates it again).
//!
//! Properties: those of the exclusive lock ([`crate::lock::lock_properties`]).
//! Known bugs of `original` in reach: 7 (persistent parents left behind:
//! `no_leaks`), 8 (a paused holder is never told: `stale_holder_overlap`).

use crate::lock::lock_properties;
use crate::model::{ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::setup::Setup;
use crate::workload::{self, WorkStep};
use zk_recipes::curator_lock::{FixedCuratorLock, LockCall, OriginalCuratorLock};
use zk_recipes::rename::RenameRecipe;
use zk_recipes::zk::Path;

/// The lock path (its parent `/locks` is created by the recipe too).
pub const LOCK_PATH: &str = "/locks/order-17";

fn lock_path() -> Path {
    Path::new(LOCK_PATH).expect("valid path")
}

fn workload(cycles: usize) -> Vec<WorkStep<LockCall>> {
    let acquire = LockCall::Acquire { timeout_ms: None };
    workload::hold_cycles(acquire, LockCall::Release, cycles)
}

fn build<R: ModelRecipe<Call = LockCall> + RenameRecipe>(
    variant: &str,
    setup: &Setup,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let oracles = Oracles {
        herd_bound: Some(1),
        fifo_parent: Some(lock_path()),
        ..Oracles::default()
    };
    let clients = ClientSpec::many(setup.clients, recipe, |_| workload(setup.cycles));
    RecipeModel::new(
        format!("curator_lock/{variant}"),
        &[],
        clients,
        setup.faults,
        oracles,
    )
    .with_setup(setup)
    .with_renaming()
    .with_properties(lock_properties(setup))
}

/// Curator 2.5.0 as seed 002 uses it, bugs included.
pub fn original(setup: &Setup) -> RecipeModel<OriginalCuratorLock> {
    build("original", setup, |c| {
        OriginalCuratorLock::new(lock_path(), c as u64 + 1)
    })
}

/// The corrected lock.
pub fn fixed(setup: &Setup) -> RecipeModel<FixedCuratorLock> {
    build("fixed", setup, |c| {
        FixedCuratorLock::new(lock_path(), c as u64 + 1)
    })
}
