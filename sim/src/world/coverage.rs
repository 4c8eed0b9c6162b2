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
#[cfg(madsim)]
use std::collections::BTreeMap;
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
    /// The last tree abstracted: (its last zxid and the owners' hash, its
    /// hashes).
    tree: Option<((i64, u64), TreeHashes)>,
}

impl Coverage {
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

    /// The run's states, steps and features, each once, in order.
    pub fn finished(mut self) -> Coverage {
        for list in [&mut self.states, &mut self.transitions, &mut self.features] {
            list.sort_unstable();
            list.dedup();
        }
        self.tree = None;
        self.last_features = Vec::new();
        self
    }
}

/// Fixed seeds: a state hashes the same in every process of one binary.
fn hasher() -> ahash::AHasher {
    use std::hash::BuildHasher;
    ahash::RandomState::with_seeds(
        0xc0fe_0000_5e4e_0001,
        0xc0fe_0000_5e4e_0002,
        0xc0fe_0000_5e4e_0003,
        0xc0fe_0000_5e4e_0004,
    )
    .build_hasher()
}

fn hash_of(value: &impl Hash) -> u64 {
    let mut hasher = hasher();
    value.hash(&mut hasher);
    hasher.finish()
}

#[cfg(madsim)]
impl<R: SimRecipe> Shared<R> {
    /// Records the world's abstract state and each client's feature, when
    /// this run keeps coverage.
    pub fn observe_coverage(&mut self) {
        if self.coverage.is_none() {
            return;
        }
        let trees = self.tree_hashes();
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
        if let Some(coverage) = &mut self.coverage {
            coverage.observe(global.finish());
            coverage.observe_features(&features);
        }
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

    /// The tree's hashes ([`Shared::abstract_tree`]): as a whole, and as
    /// each client sees it (each ephemeral's owner as itself, another
    /// client, or a session no client has), computed again only when the
    /// tree or the sessions' owners changed since the last time.
    fn tree_hashes(&mut self) -> TreeHashes {
        let key = (self.ensemble.committed().last_zxid(), hash_of(&self.owners));
        if let Some(coverage) = &self.coverage {
            if let Some((cached, hashes)) = &coverage.tree {
                if *cached == key {
                    return hashes.clone();
                }
            }
        }
        let tree = self.abstract_tree();
        let per_client = (0..self.clients.len())
            .map(|me| {
                let seen: Vec<(&str, u8)> = tree
                    .iter()
                    .map(|(path, owner)| {
                        let owner = match owner {
                            None => 0,
                            Some(client) if *client == me => 1,
                            Some(usize::MAX) => 3,
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
            coverage.tree = Some((key, hashes.clone()));
        }
        hashes
    }

    /// The committed tree, abstracted: (path, owner) for every node, in
    /// path order (owner: None for a persistent node, Some(client index),
    /// or Some(usize::MAX) for a session no client has).
    fn abstract_tree(&self) -> Vec<(String, Option<usize>)> {
        let server = self.ensemble.committed();
        let paths = server.paths();
        let mut sequences: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for path in &paths {
            if let (Some((parent, _)), Some(sequence)) =
                (path.as_str().rsplit_once('/'), sequence_of(path.name()))
            {
                sequences.entry(parent).or_default().push(sequence);
            }
        }
        for numbers in sequences.values_mut() {
            numbers.sort_unstable();
        }
        let mut abstracted: BTreeMap<&str, String> = BTreeMap::new();
        let mut nodes = Vec::with_capacity(paths.len());
        for path in &paths {
            let text = path.as_str();
            if text == "/" || text.starts_with("/zookeeper") {
                continue;
            }
            let (parent, name) = text.rsplit_once('/').unwrap_or(("", text));
            let name = match sequence_of(name) {
                Some(sequence) => {
                    let rank = sequences[parent].partition_point(|&n| n < sequence);
                    format!("{}#{rank}", without_digits(&name[..name.len() - 10]))
                }
                None => without_digits(name),
            };
            let parent = abstracted.get(parent).map_or("", String::as_str);
            let full = format!("{parent}/{name}");
            let owner = server
                .stat(path)
                .map(|stat| stat.ephemeral_owner)
                .filter(|&owner| owner != 0)
                .map(|owner| {
                    let session = zk_recipes::zk::SessionId(owner);
                    self.owners.get(&session).copied().unwrap_or(usize::MAX)
                });
            nodes.push((full.clone(), owner));
            abstracted.insert(text, full);
        }
        nodes.sort();
        nodes
    }
}

/// The tree's hash as a whole and as each client sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeHashes {
    global: u64,
    per_client: Vec<u64>,
}

#[cfg_attr(not(madsim), allow(dead_code))]
/// The sequence number a sequential node's name ends with (ten digits
/// after at least one other character), if it has one.
fn sequence_of(name: &str) -> Option<u64> {
    let split = name.len().checked_sub(10).filter(|&at| at > 0)?;
    let digits = name.get(split..)?;
    match digits.bytes().all(|b| b.is_ascii_digit()) {
        true => digits.parse().ok(),
        false => None,
    }
}

#[cfg_attr(not(madsim), allow(dead_code))]
fn without_digits(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_digit()).collect()
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

    #[test]
    fn sequence_numbers_and_ids_are_read_or_dropped() {
        assert_eq!(sequence_of("x-0000000012"), Some(12));
        assert_eq!(sequence_of("0000000012"), None, "no prefix");
        assert_eq!(sequence_of("lock"), None);
        assert_eq!(without_digits("x-8675-lock-"), "x--lock-");
    }
}
