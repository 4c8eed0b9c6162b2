//! Model of the shared (read/write) lock of the ZooKeeper recipes
//! documentation (`zk_recipes::shared_lock`).
//!
//! Protocol: readers create `read-`, writers `write-` EPHEMERAL_SEQUENTIAL
//! nodes under the lock; a reader holds when no write node is older, a
//! writer when no node at all is older; each waits on the node that blocks
//! it. Release deletes the node.
//!
//! Configuration: `/shared/db` exists; even-numbered clients write, odd ones
//! read; each acquires and releases if it got the lock, once per cycle.
//! Unique ids are 1..=N.
//!
//! Properties: `mutual_exclusion` (a writer only alone), fenced mutual
//! exclusion among writers, no leaked nodes, no stuck waiter, liveness;
//! examples as for the exclusive lock. Known bug of `original` in reach: 2
//! (a blind create retry leaves an orphan node: stuck waiter).

use crate::model::{ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::properties::{self, names};
use crate::setup::Setup;
use crate::workload::{self, WorkStep};
use stateright::Property;
use zk_recipes::rename::RenameRecipe;
use zk_recipes::shared_lock::{FixedSharedLock, LockMode, OriginalSharedLock, SharedLockCall};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};

/// The lock node.
pub const LOCK_PATH: &str = "/shared/db";

fn lock_path() -> Path {
    Path::new(LOCK_PATH).expect("valid path")
}

/// Client `c` writes when `c` is even, reads otherwise.
pub fn mode_of(client: usize) -> LockMode {
    if client.is_multiple_of(2) {
        LockMode::Write
    } else {
        LockMode::Read
    }
}

fn workload(client: usize, cycles: usize) -> Vec<WorkStep<SharedLockCall>> {
    let acquire = SharedLockCall::Acquire {
        mode: mode_of(client),
    };
    workload::hold_cycles(acquire, SharedLockCall::Release, cycles)
}

fn setup_requests() -> Vec<Request> {
    ["/shared", LOCK_PATH]
        .into_iter()
        .map(|p| Request::Create {
            path: Path::new(p).expect("valid path"),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        })
        .collect()
}

fn shared_lock_properties<R: ModelRecipe>(setup: &Setup) -> Vec<Property<RecipeModel<R>>> {
    let mut list = vec![
        properties::mutual_exclusion(names::MUTUAL_EXCLUSION),
        properties::fenced_mutual_exclusion(),
        properties::no_leaks(),
        properties::no_stuck_waiter(),
        properties::liveness(),
        properties::acquired(names::LOCK_ACQUIRED),
        properties::workload_can_complete(),
    ];
    list.extend(properties::expiry_examples(setup));
    list
}

fn build<R: ModelRecipe<Call = SharedLockCall> + RenameRecipe>(
    variant: &str,
    setup: &Setup,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let clients = ClientSpec::many(setup.clients, recipe, |c| workload(c, setup.cycles));
    RecipeModel::new(
        format!("shared_lock/{variant}"),
        &setup_requests(),
        clients,
        setup.faults,
        Oracles::default(),
    )
    .with_setup(setup)
    .with_renaming()
    .with_properties(shared_lock_properties(setup))
}

/// The documented recipe with a blind create retry.
pub fn original(setup: &Setup) -> RecipeModel<OriginalSharedLock> {
    build("original", setup, |_| OriginalSharedLock::new(lock_path()))
}

/// Ticket with a unique id, containers, zxid tokens.
pub fn fixed(setup: &Setup) -> RecipeModel<FixedSharedLock> {
    build("fixed", setup, |c| {
        FixedSharedLock::new(lock_path(), c as u64 + 1)
    })
}
