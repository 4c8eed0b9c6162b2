//! [`ObserveCall`] for the recipes' call types: which call acquires, which
//! releases, which offers what.

use super::{CallObservation, ObserveCall};
use zk_recipes::barrier::BarrierCall;
use zk_recipes::election::ElectionCall;
use zk_recipes::queue::QueueCall;
use zk_recipes::semaphore::SemaphoreCall;
use zk_recipes::shared_lock::SharedLockCall;
use zk_recipes::{curator_lock, lock};

impl ObserveCall for lock::LockCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            lock::LockCall::Lock => CallObservation::Acquire,
            lock::LockCall::Unlock => CallObservation::Release,
        }
    }
}

impl ObserveCall for curator_lock::LockCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            curator_lock::LockCall::Acquire { .. } => CallObservation::Acquire,
            curator_lock::LockCall::Release => CallObservation::Release,
        }
    }
}

impl ObserveCall for SharedLockCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            SharedLockCall::Acquire { .. } => CallObservation::Acquire,
            SharedLockCall::Release => CallObservation::Release,
        }
    }
}

impl ObserveCall for SemaphoreCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            SemaphoreCall::Acquire { .. } => CallObservation::Acquire,
            SemaphoreCall::Return => CallObservation::Release,
        }
    }
}

impl ObserveCall for ElectionCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            ElectionCall::Volunteer => CallObservation::Acquire,
            ElectionCall::Resign => CallObservation::Release,
        }
    }
}

impl ObserveCall for QueueCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            QueueCall::Offer(item) => CallObservation::Offer { item: item.clone() },
            QueueCall::Take | QueueCall::Poll => CallObservation::Take,
        }
    }
}

impl ObserveCall for BarrierCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            BarrierCall::Enter => CallObservation::Enter,
            BarrierCall::Leave => CallObservation::Leave,
        }
    }
}
