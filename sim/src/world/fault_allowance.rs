//! [`FaultAllowance`]: the faults an exploration may still inject, by
//! kind. The choice tape spends it; the ensemble's fault choices are
//! offered from it.

/// The faults an exploration may inject: at most this many of each kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FaultAllowance {
    /// Connection losses (before or after apply, or a drop between
    /// requests).
    pub connection_loss: u32,
    /// Session expiries (instead of a request, or between requests).
    pub expiry: u32,
    /// Process pauses longer than the session (between requests).
    pub pause: u32,
    /// Ensemble: lag spikes of a follower (between requests).
    pub lag_spike: u32,
    /// Ensemble: server crashes (between requests).
    pub server_crash: u32,
    /// Ensemble: partitions of a server from the others (between requests).
    pub server_partition: u32,
    /// Ensemble: leader losses (between requests).
    pub leader_change: u32,
    /// Ensemble: a server frozen, its connections open (between
    /// requests).
    pub server_freeze: u32,
}

impl FaultAllowance {
    /// True when the budget allows an ensemble fault.
    pub fn has_server_faults(&self) -> bool {
        self.lag_spike
            + self.server_crash
            + self.server_partition
            + self.leader_change
            + self.server_freeze
            > 0
    }
}
