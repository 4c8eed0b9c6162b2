//! The application side of a model: each client's short script of calls
//! (lock then unlock, offer, take, enter then leave). A client makes its next
//! call once the previous one has an outcome. A release step (unlock, resign,
//! return leases) is made only while the client holds something and skipped
//! otherwise (the lock call failed, or the hold was lost); making it ends the
//! application's tenure at once: it stops using the resource when it calls
//! unlock, not when the recipe confirms. A step made after success (leave
//! after enter) is skipped when the previous call failed.

/// When a workload step is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Gate {
    Always,
    /// A release: only if the client holds something (skipped otherwise);
    /// the client stops acting as holder when it makes the call.
    Release,
    /// Only if the previous call did not fail (e.g. leave after enter).
    AfterSuccess,
}

/// One application call of a client's script.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkStep<C> {
    pub call: C,
    pub gate: Gate,
}

impl<C> WorkStep<C> {
    pub fn always(call: C) -> Self {
        WorkStep {
            call,
            gate: Gate::Always,
        }
    }

    pub fn release(call: C) -> Self {
        WorkStep {
            call,
            gate: Gate::Release,
        }
    }

    pub fn after_success(call: C) -> Self {
        WorkStep {
            call,
            gate: Gate::AfterSuccess,
        }
    }
}
