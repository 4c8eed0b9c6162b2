//! The shared abstraction: the abstract state the stateful checker, the
//! stepper and a world run can all compute, so that what a sweep reached is
//! measured against what the checker proved reachable (`sweep --coverage
//! --against-model`), and a state the sweep never reached is shown by a
//! checker schedule that the stepper replays into it.
//!
//! It keeps what all three hold the same way and drops the rest:
//!
//! - the committed tree: each node's path, a sequential name by its rank
//!   among its parent's sequential children and any other digits dropped
//!   (a unique id in a name), and an ephemeral's owner as its client's
//!   index (or a session no client has);
//! - per client, from its session layer (the same Java-client-like
//!   [`ClientSession`] in all three): its connection state, whether the
//!   server still holds its current session, and the kinds of its requests
//!   not answered yet (in flight or still queued, as one list: a world
//!   sends what a recipe emits at once, the model a step later).
//!
//! Not in it: a recipe's own state (an async recipe's cannot be read),
//! times, zxids, session ids, a node's data, and what only a world has
//! (paused processes, retry timers, the phase). A world's run coverage
//! ([`crate::world::coverage`]) is this and those.
//!
//! A state is a 64-bit hash (aHash with fixed seeds): the same in every
//! process of one binary, not across builds.

use crate::client::ClientSession;
use crate::server::ZkServer;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use zk_recipes::zk::SessionId;
use zk_recipes::Recipe;

/// The tree, abstracted: (path, owner) for every node but `/` and
/// `/zookeeper`, in path order; owner None for a persistent node,
/// Some(client index) for an ephemeral, Some([`NO_CLIENT`]) for an
/// ephemeral whose session no client has.
pub type AbstractTree = Vec<(String, Option<usize>)>;

/// The owner of an ephemeral whose session belongs to no client.
pub const NO_CLIENT: usize = usize::MAX;

/// A hasher with fixed seeds: a state hashes the same in every process of
/// one binary.
pub fn hasher() -> ahash::AHasher {
    use std::hash::BuildHasher;
    ahash::RandomState::with_seeds(
        0xc0fe_0000_5e4e_0001,
        0xc0fe_0000_5e4e_0002,
        0xc0fe_0000_5e4e_0003,
        0xc0fe_0000_5e4e_0004,
    )
    .build_hasher()
}

pub fn hash_of(value: &impl Hash) -> u64 {
    let mut hasher = hasher();
    value.hash(&mut hasher);
    hasher.finish()
}

/// The shared abstract state of a server and its clients' sessions;
/// `owner` names the client a session belongs to.
pub fn shared_state<'a, R: Recipe + 'a>(
    server: &ZkServer,
    owner: impl Fn(SessionId) -> Option<usize>,
    sessions: impl IntoIterator<Item = &'a ClientSession<R>>,
) -> u64 {
    let tree = hash_of(&abstract_tree(server, owner));
    let clients: Vec<u64> = sessions
        .into_iter()
        .map(|session| client_part(session, server))
        .collect();
    combine(tree, &clients)
}

/// The shared state from the tree's hash and the clients' parts (for a
/// caller that caches the tree's hash).
pub fn combine(tree: u64, clients: &[u64]) -> u64 {
    hash_of(&(tree, clients))
}

/// One client's part of the shared state: its connection state, whether
/// the server holds its current session, and the kinds of its requests not
/// answered yet (in flight or queued: one list).
pub fn client_part<R: Recipe>(session: &ClientSession<R>, server: &ZkServer) -> u64 {
    let mut hasher = hasher();
    std::mem::discriminant(&session.state).hash(&mut hasher);
    let held = session
        .session_id
        .is_some_and(|id| server.is_session_alive(id));
    held.hash(&mut hasher);
    // Sent or not yet: a world sends what a recipe emits in the same event,
    // where the model sends it a step later.
    let requests = session.in_flight.iter().chain(&session.outgoing);
    for (_, request, _) in requests {
        std::mem::discriminant(request).hash(&mut hasher);
    }
    (session.in_flight.len() + session.outgoing.len()).hash(&mut hasher);
    hasher.finish()
}

/// The server's tree, abstracted (see [`AbstractTree`]).
pub fn abstract_tree(
    server: &ZkServer,
    owner: impl Fn(SessionId) -> Option<usize>,
) -> AbstractTree {
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
        let ephemeral = server
            .stat(path)
            .map(|stat| stat.ephemeral_owner)
            .filter(|&session| session != 0);
        let owned_by = ephemeral.map(|session| owner(SessionId(session)).unwrap_or(NO_CLIENT));
        nodes.push((full.clone(), owned_by));
        abstracted.insert(text, full);
    }
    nodes.sort();
    nodes
}

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

fn without_digits(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_digit()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{ServerConfig, SortedOrder};
    use zk_recipes::zk::{Acls, CreateMode, Path, Request};

    #[test]
    fn sequence_numbers_and_ids_are_read_or_dropped() {
        assert_eq!(sequence_of("x-0000000012"), Some(12));
        assert_eq!(sequence_of("0000000012"), None, "no prefix");
        assert_eq!(sequence_of("lock"), None);
        assert_eq!(without_digits("x-8675-lock-"), "x--lock-");
    }

    #[test]
    fn the_tree_names_sequential_nodes_by_rank_and_ephemerals_by_client() {
        let mut server = ZkServer::new(ServerConfig::default());
        let (one, two) = (SessionId(1), SessionId(2));
        for id in [one, two] {
            server.open_session(id, 4000).unwrap();
        }
        let create = |path: &str, mode| Request::Create {
            path: Path::new(path).unwrap(),
            data: Vec::new(),
            mode,
            acl: Acls::Open,
        };
        let _ = server.apply(
            one,
            &create("/locks", CreateMode::Persistent),
            &mut SortedOrder,
        );
        for session in [two, one, two] {
            let request = create("/locks/x-", CreateMode::EphemeralSequential);
            let _ = server.apply(session, &request, &mut SortedOrder);
        }
        let owner = |id: SessionId| (id == one).then_some(0);
        let tree = abstract_tree(&server, owner);
        let expected: AbstractTree = vec![
            ("/locks".into(), None),
            ("/locks/x-#0".into(), Some(NO_CLIENT)),
            ("/locks/x-#1".into(), Some(0)),
            ("/locks/x-#2".into(), Some(NO_CLIENT)),
        ];
        assert_eq!(tree, expected);
    }
}
