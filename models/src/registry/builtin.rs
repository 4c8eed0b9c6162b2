//! The seven shipped recipes, registered through the same door as a
//! user's: each variant's simulation (constructor and workload calls) and
//! its model: the hold recipes' hand-written ones (`crate::lock`, ...),
//! which set the FIFO and herd oracles and the examples the generic model
//! does not know; the queues and barriers the generic ones, built from the
//! same constructor and calls as a user's.

use super::{RecipeEntry, Variant};
use crate::{curator_lock, election, lock, semaphore, shared_lock};
use zk_recipes::barrier::{BarrierCall, FixedBarrier, OriginalBarrier, TutorialNodeMode};
use zk_recipes::curator_lock::{self as curator, FixedCuratorLock, OriginalCuratorLock};
use zk_recipes::election::{ElectionCall, FixedElection, OriginalElection};
use zk_recipes::lock::{FixedLock, LockCall, OriginalLock};
use zk_recipes::queue::{DistributedQueueOriginal, FixedQueue, QueueCall, TutorialQueueOriginal};
use zk_recipes::semaphore::{FixedSemaphore, OriginalSemaphore, SemaphoreCall};
use zk_recipes::shared_lock::{FixedSharedLock, LockMode, OriginalSharedLock, SharedLockCall};
use zk_sim::scenario::{ClientContext, RecipeKind};
use zk_sim::world::adapters::{BarrierCalls, HoldCalls, QueueCalls};

/// Every built-in recipe, in the order listings show them.
pub(super) fn recipes() -> Vec<RecipeEntry> {
    vec![
        lock(),
        curator_lock(),
        shared_lock(),
        semaphore(),
        election(),
        queue(),
        barrier(),
    ]
}

fn lock() -> RecipeEntry {
    let calls = || HoldCalls::new(LockCall::Lock, LockCall::Unlock);
    RecipeEntry::new("lock", RecipeKind::ExclusiveLock, "/locks")
        .variant(
            Variant::hold(
                "original",
                "seed 000 WriteLock, bugs included",
                calls(),
                |c| OriginalLock::new(c.path.clone()),
            )
            .needs_existing_path()
            .model(lock::original),
        )
        .variant(
            Variant::hold(
                "fixed",
                "sequence order, unique id, predecessor watch",
                calls(),
                |c| FixedLock::new(c.path.clone(), c.unique_id),
            )
            .needs_existing_path()
            .model(lock::fixed),
        )
        .variant(
            Variant::hold(
                "unsynced",
                "fixed without the sync before its recovery read: fails on an ensemble only",
                calls(),
                |c| FixedLock::without_recovery_sync(c.path.clone(), c.unique_id),
            )
            .needs_existing_path()
            .model(lock::unsynced),
        )
}

fn curator_lock() -> RecipeEntry {
    let calls = || {
        HoldCalls::new(
            curator::LockCall::Acquire { timeout_ms: None },
            curator::LockCall::Release,
        )
    };
    RecipeEntry::new("curator_lock", RecipeKind::ExclusiveLock, "/locks/key")
        .variant(
            Variant::hold(
                "original",
                "Curator 2.5.0 InterProcessMutex as seed 002 uses it",
                calls(),
                |c| OriginalCuratorLock::new(c.path.clone(), c.unique_id),
            )
            .model(curator_lock::original),
        )
        .variant(
            Variant::hold(
                "fixed",
                "container parents, owner check, zxid tokens",
                calls(),
                |c| FixedCuratorLock::new(c.path.clone(), c.unique_id),
            )
            .model(curator_lock::fixed),
        )
}

fn shared_lock() -> RecipeEntry {
    let acquire = |mode| SharedLockCall::Acquire { mode };
    let calls = move || {
        HoldCalls::any_of(
            vec![acquire(LockMode::Read), acquire(LockMode::Write)],
            SharedLockCall::Release,
        )
    };
    RecipeEntry::new("shared_lock", RecipeKind::SharedLock, "/shared/db")
        .variant(
            Variant::hold(
                "original",
                "documented read/write lock, blind create retry",
                calls(),
                |c| OriginalSharedLock::new(c.path.clone()),
            )
            .needs_existing_path()
            .model(shared_lock::original),
        )
        .variant(
            Variant::hold("fixed", "ticket with unique id, containers", calls(), |c| {
                FixedSharedLock::new(c.path.clone(), c.unique_id)
            })
            .model(shared_lock::fixed),
        )
}

fn semaphore() -> RecipeEntry {
    let calls = || {
        HoldCalls::new(
            SemaphoreCall::Acquire {
                count: 1,
                timeout_ms: None,
            },
            SemaphoreCall::Return,
        )
    };
    RecipeEntry::new("semaphore", RecipeKind::Semaphore, "/semaphores/db")
        .variant(
            Variant::hold(
                "original",
                "Curator 2.5.0 InterProcessSemaphoreV2",
                calls(),
                |c| OriginalSemaphore::new(c.path.clone(), c.max_leases, c.unique_id),
            )
            .model(semaphore::original),
        )
        .variant(
            Variant::hold("fixed", "one ticket for all leases, FIFO", calls(), |c| {
                FixedSemaphore::new(c.path.clone(), c.max_leases, c.unique_id)
            })
            .model(semaphore::fixed),
        )
}

fn election() -> RecipeEntry {
    let calls = || HoldCalls::new(ElectionCall::Volunteer, ElectionCall::Resign);
    RecipeEntry::new("election", RecipeKind::Election, "/leader")
        .variant(
            Variant::hold(
                "original",
                "seed 003 election: herd watch, blind retry",
                calls(),
                |c| OriginalElection::new(c.path.clone()),
            )
            .needs_existing_path()
            .model(election::original),
        )
        .variant(
            Variant::hold(
                "fixed",
                "predecessor watch, unique id, owner check",
                calls(),
                |c| FixedElection::new(c.path.clone(), c.unique_id),
            )
            .needs_existing_path()
            .model(election::fixed),
        )
}

/// The queues get the generic queue model (`super::generic`), which is
/// `crate::queue`'s: the same constructor and calls as the simulation.
fn queue() -> RecipeEntry {
    let calls = || QueueCalls::new(QueueCall::Offer, QueueCall::Take);
    RecipeEntry::new("queue", RecipeKind::Queue, "/q")
        .variant(
            Variant::queue_renamable("original", "seed 000 DistributedQueue", calls(), |c| {
                DistributedQueueOriginal::new(c.path.clone())
            })
            .needs_existing_path(),
        )
        .variant(
            Variant::queue_renamable(
                "tutorial_original",
                "seed 001 tutorial Queue",
                calls(),
                |c| TutorialQueueOriginal::new(c.path.clone()),
            )
            .needs_existing_path(),
        )
        .variant(
            Variant::queue_renamable(
                "fixed",
                "receipts in one multi: exactly once",
                calls(),
                |c| FixedQueue::new(c.path.clone(), c.unique_id),
            )
            .needs_existing_path(),
        )
}

/// The barriers get the generic barrier model (`super::generic`), which
/// is `crate::barrier`'s.
fn barrier() -> RecipeEntry {
    let calls = || BarrierCalls::new(BarrierCall::Enter, BarrierCall::Leave);
    RecipeEntry::new("barrier", RecipeKind::Barrier, "/b1")
        .variant(
            Variant::barrier_renamable(
                "original",
                "seed 001 tutorial Barrier, one host per member",
                calls(),
                tutorial_barrier,
            )
            .needs_existing_path()
            .reads_config(&["hosts", "node_mode"]),
        )
        .variant(
            Variant::barrier_renamable(
                "original_shared_host",
                "seed 001 tutorial Barrier, all members on one host",
                calls(),
                |c| {
                    let mode = TutorialNodeMode::Ephemeral;
                    OriginalBarrier::with_node_mode(c.path.clone(), c.barrier_size, "host", mode)
                },
            )
            .needs_existing_path(),
        )
        .variant(
            Variant::barrier_renamable(
                "fixed",
                "documented double barrier with a ready node",
                calls(),
                |c| FixedBarrier::new(c.path.clone(), c.barrier_size, c.unique_id),
            )
            .needs_existing_path(),
        )
}

/// The tutorial barrier as `config.hosts` and `config.node_mode` say: one
/// host name per member unless `hosts = "shared"`.
fn tutorial_barrier(c: &ClientContext) -> OriginalBarrier {
    let host = match c.hosts.as_deref() {
        Some("shared") => "host".to_string(),
        _ => format!("host-{}", c.client),
    };
    let mode = match c.node_mode.as_deref() {
        Some("ephemeral_sequential") => TutorialNodeMode::EphemeralSequential,
        _ => TutorialNodeMode::Ephemeral,
    };
    OriginalBarrier::with_node_mode(c.path.clone(), c.barrier_size, host, mode)
}
