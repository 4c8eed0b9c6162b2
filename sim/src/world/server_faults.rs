//! The state of the ensemble's faults ([`ServerFaults`]): which server is
//! down and why, lag spikes, the election under way, the expiries and
//! reconnections waiting for a leader. The data only, a floor below the
//! world's shared state; `servers.rs` makes the faults happen.

use crate::server::WatchSet;
use zk_recipes::zk::{SessionId, Zxid};

/// Why a server is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outage {
    Crashed,
    /// Cut off from the leader (it may still serve stale reads).
    Partitioned,
    /// Frozen (`Fault::Freeze`): it reads and answers nothing, its
    /// connections open.
    Frozen,
}

/// An election under way.
#[derive(Clone, Copy, Debug)]
pub struct Election {
    /// When the followers notice the leader is gone and close every client
    /// connection; None once they have.
    pub notice_ns: Option<u64>,
    /// It ends no earlier than this.
    pub due_ns: u64,
    /// The server it moves leadership away from (a `leader_change`), if
    /// another can lead.
    pub not: Option<usize>,
    /// Its window passed without a majority up: it takes a new window
    /// once a majority is back.
    pub awaits_majority: bool,
}

/// The state of the ensemble's faults.
#[derive(Clone, Debug)]
pub struct ServerFaults {
    /// Per server: the outage it is in.
    pub down: Vec<Option<Outage>>,
    /// Per server: outages so far (an event of an earlier one is stale).
    pub outages: Vec<u64>,
    /// Per server: applies are delayed by `.0` ns until `.1`.
    pub lag_spikes: Vec<Option<(u64, u64)>>,
    /// Per server: the heals that flushed its scheduled applies so far (an
    /// apply scheduled before the last one is stale).
    pub apply_rounds: Vec<u64>,
    pub election: Option<Election>,
    /// Expiries decided while no leader was there, waiting for one to
    /// commit them: (client, session), in the order they struck.
    pub waiting_expiries: Vec<(usize, SessionId)>,
    /// Reconnection attempts hung at a server that reaches no leader.
    pub hung: Vec<HungConnect>,
    /// Per server: when its freeze ends, and when the others notice it
    /// (tickTime × syncLimit after it began); meaningful while it is
    /// Frozen.
    pub thaw_ns: Vec<u64>,
    pub freeze_noticed_ns: Vec<u64>,
    /// Per server: a `LagDrop` check is scheduled (a commit it will
    /// acknowledge past tickTime × syncLimit).
    pub drop_checked: Vec<bool>,
}

/// A reconnection attempt a server cannot revalidate (it reaches no
/// leader): no answer until the server notices it lost the leader (the
/// attempt is closed) or reaches one (the attempt goes on). A later
/// attempt of the client (a new epoch) makes it stale.
#[derive(Clone, Debug)]
pub struct HungConnect {
    pub client: usize,
    pub epoch: u32,
    pub server: usize,
    pub session: SessionId,
    pub last_zxid: Zxid,
    pub watches: WatchSet,
}

impl ServerFaults {
    pub fn new(servers: usize) -> ServerFaults {
        ServerFaults {
            down: vec![None; servers],
            outages: vec![0; servers],
            lag_spikes: vec![None; servers],
            apply_rounds: vec![0; servers],
            election: None,
            waiting_expiries: Vec::new(),
            hung: Vec::new(),
            thaw_ns: vec![0; servers],
            freeze_noticed_ns: vec![0; servers],
            drop_checked: vec![false; servers],
        }
    }

    /// When `server`'s freeze ends, if it is frozen.
    pub fn frozen_until(&self, server: usize) -> Option<u64> {
        (self.down.get(server) == Some(&Some(Outage::Frozen))).then(|| self.thaw_ns[server])
    }

    /// The extra delay of an apply scheduled now on `server`, in ns.
    pub fn lag_spike_ns(&self, server: usize, now_ns: u64) -> u64 {
        match self.lag_spikes[server] {
            Some((delay, until)) if now_ns < until => delay,
            _ => 0,
        }
    }
}
