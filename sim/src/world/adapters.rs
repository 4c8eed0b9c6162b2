//! What the built-in workloads need to know about a recipe's calls: which
//! call acquires and which releases, how to offer an item, how to enter a
//! barrier. Implemented here for the recipes of `zk-recipes`; a user's
//! recipe implements the one its workload needs.

use super::shared::SimRecipe;
use zk_recipes::barrier::{BarrierCall, FixedBarrier, OriginalBarrier};
use zk_recipes::election::{ElectionCall, FixedElection, OriginalElection};
use zk_recipes::queue::{DistributedQueueOriginal, FixedQueue, QueueCall, TutorialQueueOriginal};
use zk_recipes::semaphore::{FixedSemaphore, OriginalSemaphore, SemaphoreCall};
use zk_recipes::shared_lock::{FixedSharedLock, LockMode, OriginalSharedLock, SharedLockCall};
use zk_recipes::{curator_lock, lock};

/// Recipes that are acquired and released: locks, elections, semaphores.
pub trait HoldCalls: SimRecipe {
    /// The acquisition calls a client may make (e.g. read or write for a
    /// shared lock); the workload picks one per cycle.
    fn acquire_calls() -> Vec<Self::Call>;
    fn release_call() -> Self::Call;
}

/// Queues.
pub trait QueueCalls: SimRecipe {
    fn offer_call(item: Vec<u8>) -> Self::Call;
    /// A take that waits for an item (or answers Empty at once).
    fn take_call() -> Self::Call;
}

/// Barriers.
pub trait BarrierCalls: SimRecipe {
    fn enter_call() -> Self::Call;
    fn leave_call() -> Self::Call;
}

macro_rules! hold_calls {
    ($recipe:ty, [$($acquire:expr),+], $release:expr) => {
        impl HoldCalls for $recipe {
            fn acquire_calls() -> Vec<Self::Call> {
                vec![$($acquire),+]
            }
            fn release_call() -> Self::Call {
                $release
            }
        }
    };
}

hold_calls!(
    lock::OriginalLock,
    [lock::LockCall::Lock],
    lock::LockCall::Unlock
);
hold_calls!(
    lock::FixedLock,
    [lock::LockCall::Lock],
    lock::LockCall::Unlock
);
hold_calls!(
    curator_lock::OriginalCuratorLock,
    [curator_lock::LockCall::Acquire { timeout_ms: None }],
    curator_lock::LockCall::Release
);
hold_calls!(
    curator_lock::FixedCuratorLock,
    [curator_lock::LockCall::Acquire { timeout_ms: None }],
    curator_lock::LockCall::Release
);
hold_calls!(
    OriginalSharedLock,
    [
        SharedLockCall::Acquire {
            mode: LockMode::Read
        },
        SharedLockCall::Acquire {
            mode: LockMode::Write
        }
    ],
    SharedLockCall::Release
);
hold_calls!(
    FixedSharedLock,
    [
        SharedLockCall::Acquire {
            mode: LockMode::Read
        },
        SharedLockCall::Acquire {
            mode: LockMode::Write
        }
    ],
    SharedLockCall::Release
);
hold_calls!(
    OriginalSemaphore,
    [SemaphoreCall::Acquire {
        count: 1,
        timeout_ms: None
    }],
    SemaphoreCall::Return
);
hold_calls!(
    FixedSemaphore,
    [SemaphoreCall::Acquire {
        count: 1,
        timeout_ms: None
    }],
    SemaphoreCall::Return
);
hold_calls!(
    OriginalElection,
    [ElectionCall::Volunteer],
    ElectionCall::Resign
);
hold_calls!(
    FixedElection,
    [ElectionCall::Volunteer],
    ElectionCall::Resign
);

macro_rules! queue_calls {
    ($($recipe:ty),+) => {$(
        impl QueueCalls for $recipe {
            fn offer_call(item: Vec<u8>) -> QueueCall {
                QueueCall::Offer(item)
            }
            fn take_call() -> QueueCall {
                QueueCall::Take
            }
        }
    )+};
}

queue_calls!(DistributedQueueOriginal, TutorialQueueOriginal, FixedQueue);

macro_rules! barrier_calls {
    ($($recipe:ty),+) => {$(
        impl BarrierCalls for $recipe {
            fn enter_call() -> BarrierCall {
                BarrierCall::Enter
            }
            fn leave_call() -> BarrierCall {
                BarrierCall::Leave
            }
        }
    )+};
}

barrier_calls!(OriginalBarrier, FixedBarrier);
