//! The application side of a model: each client's short script of calls
//! (lock then unlock, offer, take, enter then leave). A client makes its next
//! call once the previous one has an outcome. A release step (unlock, resign,
//! return leases) is made only while the client holds something and skipped
//! otherwise (the lock call failed, or the hold was lost); making it ends the
//! application's tenure at once: it stops using the resource when it calls
//! unlock, not when the recipe confirms. A step made after success (leave
//! after enter) is skipped when the previous call failed.
//!
//! A hold workload (lock, election, semaphore, ...) is an acquire and a
//! release made [`hold_cycles`] times: a client whose acquire failed skips
//! that cycle's release and acquires again in the next.

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

/// `script` made `cycles` times over.
pub fn repeat<C: Clone>(script: &[WorkStep<C>], cycles: usize) -> Vec<WorkStep<C>> {
    assert!(cycles >= 1, "a workload has at least one cycle");
    script
        .iter()
        .cycle()
        .take(script.len() * cycles)
        .cloned()
        .collect()
}

/// `acquire`, then `release` if the client holds something, `cycles` times.
pub fn hold_cycles<C: Clone>(acquire: C, release: C, cycles: usize) -> Vec<WorkStep<C>> {
    repeat(
        &[WorkStep::always(acquire), WorkStep::release(release)],
        cycles,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_cycles_repeat_acquire_and_release() {
        let steps = hold_cycles("lock", "unlock", 2);
        let calls: Vec<(&str, Gate)> = steps.iter().map(|s| (s.call, s.gate)).collect();
        assert_eq!(
            calls,
            [
                ("lock", Gate::Always),
                ("unlock", Gate::Release),
                ("lock", Gate::Always),
                ("unlock", Gate::Release)
            ]
        );
        assert_eq!(hold_cycles("a", "b", 1).len(), 2);
    }
}
