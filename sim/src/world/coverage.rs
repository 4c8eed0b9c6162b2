//! A run's coverage: the abstract states it passed through and the steps
//! between them, for `sweep --coverage` and `fuzz` (how much of a world a
//! campaign of runs reached, and where that stopped growing).
//!
//! The abstract state is taken after every event of the world. It keeps
//! what a recipe's behaviour turns on and drops what differs between runs
//! without mattering (times, zxids, session ids, sequence numbers as
//! numbers, a node's data):
//!
//! - the committed tree: each node's path, a sequential name by its rank
//!   among its parent's sequential children and any other digits dropped
//!   (a unique id in a name), and an ephemeral's owner as its client's
//!   index (or a session no client has any more);
//! - per client: its connection's state, whether the servers still hold
//!   its session, whether its process is paused, its workload done, the
//!   kind of its last call and whether it waits for the answer, and the
//!   kinds of its requests in flight and queued;
//! - the world's phase; on an ensemble, which servers are down and
//!   whether an election is under way.
//!
//! Beside each state, each client's feature: its own part with the tree
//! as it sees it (an ephemeral's owner as itself, another client or a dead
//! session), the signal `zkcheck fuzz` follows.
//!
//! A recipe's own state is not in it (an async recipe's cannot be read):
//! two runs that differ only inside a recipe are one abstract state.
//! Each state is kept as a 64-bit hash (aHash with fixed seeds: the same
//! in every process of one binary), a step as the hash of its two states.

#[cfg(madsim)]
use super::{shared::Shared, SimRecipe};
use crate::abstraction::hash_of;
#[cfg(madsim)]
use crate::abstraction::{self, hasher};
#[cfg(madsim)]
use crate::client::ConnectionState;
#[cfg(madsim)]
use std::hash::{Hash, Hasher};

/// The abstract states a run reached and the steps it took between them
/// (each a hash; see the module doc): sorted and without repeats once the
/// run is over ([`Coverage::finished`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub states: Vec<u64>,
    pub transitions: Vec<u64>,
    last: Option<u64>,
    /// Each client's feature: its own part of the state with the tree as
    /// it sees it (another client's node is "another's"), so that what one
    /// client does is new once, whichever client does it and whatever the
    /// others do meanwhile: the signal a guided search follows.
    pub features: Vec<u64>,
    last_features: Vec<u64>,
    /// The states of the shared abstraction ([`crate::abstraction`]): what
    /// the stateful checker can say too, for `sweep --against-model`.
    pub shared: Vec<u64>,
    /// The last tree abstracted: (its last zxid and the owners' hash, its
    /// hashes).
    tree: Option<((i64, u64), TreeHashes)>,
    /// Where a request fault could have struck, in the order the run drew
    /// them: what `zkcheck fuzz`'s strike aims at (recorded runs only).
    pub fault_sites: Vec<FaultSite>,
    /// The words of a request's draw that lose the request, and that lose
    /// its reply ([`crate::faults::RequestFaults::loss_words`]).
    pub loss_words: [u64; 2],
}

/// A request whose fault the run drew from its `faults` stream: the
/// draw's index on that stream, and the request's kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSite {
    pub word: usize,
    /// The request's kind (its variant, as a hash).
    pub kind: u64,
}

impl Coverage {
    /// An empty coverage of a run whose request draws strike below
    /// `loss_words` ([`Coverage::loss_words`]).
    pub fn striking_with(loss_words: [u64; 2]) -> Coverage {
        Coverage {
            loss_words,
            ..Coverage::default()
        }
    }

    /// Adds the state the world is in now (a step from the last one, if
    /// it differs).
    pub fn observe(&mut self, state: u64) {
        if self.last == Some(state) {
            return;
        }
        if let Some(last) = self.last {
            self.transitions.push(hash_of(&(last, state)));
        }
        self.states.push(state);
        self.last = Some(state);
    }

    /// Adds each client's feature now (one that did not change since the
    /// last event is not added again).
    pub fn observe_features(&mut self, features: &[u64]) {
        if self.last_features.as_slice() == features {
            return;
        }
        self.features.extend(features);
        self.last_features = features.to_vec();
    }

    /// Adds the shared-abstraction state the world is in now (one that did
    /// not change since the last event is not added again).
    pub fn observe_shared(&mut self, state: u64) {
        if self.shared.last() != Some(&state) {
            self.shared.push(state);
        }
    }

    /// The run's states, steps, features and shared states, each once, in
    /// order.
    pub fn finished(mut self) -> Coverage {
        let lists = [
            &mut self.states,
            &mut self.transitions,
            &mut self.features,
            &mut self.shared,
        ];
        for list in lists {
            list.sort_unstable();
            list.dedup();
        }
        self.tree = None;
        self.last_features = Vec::new();
        self
    }
}

#[cfg(madsim)]
impl<R: SimRecipe> Shared<R> {
    /// Records the world's abstract state and each client's feature, when
    /// this run keeps coverage.
    pub fn observe_coverage(&mut self) {
        if self.coverage.is_none() {
            return;
        }
        self.refresh_tree_hashes();
        let trees = self
            .coverage
            .as_ref()
            .and_then(|coverage| coverage.tree.as_ref())
            .map(|(_, hashes)| hashes)
            .expect("the tree's hashes, refreshed");
        let locals: Vec<u64> = (0..self.clients.len())
            .map(|client| self.client_local(client))
            .collect();
        let phase = hash_of(&std::mem::discriminant(&self.phase));
        let mut global = hasher();
        (phase, trees.global, &locals).hash(&mut global);
        let mut ensemble = hasher();
        if self.ensemble.servers() > 1 {
            for down in &self.servers.down {
                down.is_some().hash(&mut ensemble);
            }
            self.servers.election.is_some().hash(&mut ensemble);
        }
        let ensemble = ensemble.finish();
        ensemble.hash(&mut global);
        let features = locals
            .iter()
            .zip(&trees.per_client)
            .map(|(local, tree)| hash_of(&(phase, ensemble, tree, local)));
        let features: Vec<u64> = features.collect();
        let shared = self.shared_state(trees.global);
        if let Some(coverage) = &mut self.coverage {
            coverage.observe(global.finish());
            coverage.observe_features(&features);
            if let Some(shared) = shared {
                coverage.observe_shared(shared);
            }
        }
    }

    /// The shared abstraction's state now ([`abstraction`]), from the
    /// tree's hash; None while a client is between sessions. The model's
    /// clients are always in a session: they start in their first, and one
    /// that learns its session expired is in its next in the same step. A
    /// world's moments in between (connecting at the start, an expiry
    /// learned and no new session yet) have no model state.
    fn shared_state(&self, tree: u64) -> Option<u64> {
        let in_session = self.clients.iter().all(|slot| {
            let session = &slot.session;
            session.session_id.is_some() && session.state != ConnectionState::Expired
        });
        if !in_session {
            return None;
        }
        let server = self.ensemble.committed();
        let parts: Vec<u64> = self
            .clients
            .iter()
            .map(|slot| abstraction::client_part(&slot.session, server))
            .collect();
        Some(abstraction::combine(tree, &parts))
    }

    /// Client `client`'s own part of an abstract state: its connection,
    /// whether the servers still hold its session, whether it is paused,
    /// its workload done, its last call's kind and whether it waits for
    /// the answer, and the kinds of its requests in flight and queued.
    fn client_local(&self, client: usize) -> u64 {
        let slot = &self.clients[client];
        let session = &slot.session;
        let server = self.ensemble.committed();
        let mut hasher = hasher();
        std::mem::discriminant(&session.state).hash(&mut hasher);
        let held = slot
            .link
            .session
            .is_some_and(|s| server.is_session_alive(s));
        (slot.link.server_up, held, slot.paused, slot.workload_done).hash(&mut hasher);
        let call = slot
            .last_call
            .as_ref()
            .map(|(_, call)| std::mem::discriminant(call));
        (call, slot.awaiting_answer).hash(&mut hasher);
        for (_, request, _) in session.in_flight.iter().chain(&session.outgoing) {
            std::mem::discriminant(request).hash(&mut hasher);
        }
        (session.in_flight.len(), session.outgoing.len()).hash(&mut hasher);
        hasher.finish()
    }

    /// Brings the tree's hashes ([`abstraction::abstract_tree`]: as a
    /// whole, and as each client sees it, each ephemeral's owner as
    /// itself, another client, or a session no client has) up to date:
    /// computed again only when the tree or the sessions' owners changed
    /// since the last time.
    fn refresh_tree_hashes(&mut self) {
        let key = (self.ensemble.committed().last_zxid(), hash_of(&self.owners));
        let cached = self.coverage.as_ref().and_then(|c| c.tree.as_ref());
        if cached.is_some_and(|(cached, _)| *cached == key) {
            return;
        }
        let owners = &self.owners;
        let tree = abstraction::abstract_tree(self.ensemble.committed(), |session| {
            owners.get(&session).copied()
        });
        let per_client = (0..self.clients.len())
            .map(|me| {
                let seen: Vec<(&str, u8)> = tree
                    .iter()
                    .map(|(path, owner)| {
                        let owner = match owner {
                            None => 0,
                            Some(client) if *client == me => 1,
                            Some(abstraction::NO_CLIENT) => 3,
                            Some(_) => 2,
                        };
                        (path.as_str(), owner)
                    })
                    .collect();
                hash_of(&seen)
            })
            .collect();
        let hashes = TreeHashes {
            global: hash_of(&tree),
            per_client,
        };
        if let Some(coverage) = &mut self.coverage {
            coverage.tree = Some((key, hashes));
        }
    }
}

/// The tree's hash as a whole and as each client sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeHashes {
    global: u64,
    per_client: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_kept_once_and_a_repeated_state_is_no_step() {
        let mut coverage = Coverage::default();
        for state in [1, 1, 2, 1, 2] {
            coverage.observe(state);
        }
        let coverage = coverage.finished();
        assert_eq!(coverage.states, vec![1, 2]);
        assert_eq!(coverage.transitions.len(), 2, "1→2 and 2→1");
    }
}
