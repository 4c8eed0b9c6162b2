//! [`Setup`]: the size of a model, shared by every recipe module: how many
//! clients, which faults with which budgets, how getChildren orders results,
//! how many acquire/release cycles each client makes, and the server state
//! the clients start from ([`InitialState`]).

use crate::faults::FaultBudget;
use std::collections::BTreeSet;
use zk_recipes::zk::{CreateMode, Path, SessionId};

/// The session id of client 0's first session unless the setup says
/// otherwise (see [`crate::state::session_id`]).
pub const FIRST_SESSION: SessionId = SessionId(0x101);

/// Most acquire/release cycles per client a model may run (`check
/// --cycles`, schedule files).
pub const MAX_CYCLES: usize = 8;

/// The knobs every recipe model takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setup {
    pub clients: usize,
    pub faults: FaultBudget,
    pub child_order: ChildOrderMode,
    /// Explore one representative of states that differ only by a renaming
    /// of interchangeable clients (see [`crate::canonical`]).
    pub symmetry: bool,
    /// Replace zxids and sequence numbers by their ranks (see
    /// [`crate::canonical`]).
    pub ranks: bool,
    /// Partial-order reduction (see `crate::reduction`): on by default.
    pub reduction: bool,
    /// How many times each client of a hold workload (lock, Curator lock,
    /// shared lock, semaphore, election) acquires and releases: 1 by
    /// default. The queue and the barrier make their calls once.
    pub cycles: usize,
    /// The server the clients start from, beyond the recipe's own setup.
    pub initial: InitialState,
    /// Servers of the ensemble: 1 (the default, the plain server) or more
    /// (a leader and followers applying the log at the checker's pace).
    pub servers: usize,
    /// With more than one server: how many committed transactions a
    /// follower may lag behind; while one lags this much, nothing commits
    /// until it applies.
    pub lag: usize,
    /// With more than one server: a session that reconnects to a server
    /// is answered there only once that server applied every commit the
    /// leader had when it moved (the leader's revalidation; what a real
    /// 3.8 does, and the default). Off (`check
    /// --unrevalidated-reconnects`): answered at once from the server's
    /// own state, beyond 3.8.
    pub revalidate: bool,
}

/// Most servers a model may have (`check --servers`).
pub const MAX_SERVERS: usize = 2;

/// The default lag budget of a follower (`check --lag`).
pub const DEFAULT_LAG: usize = 2;

/// The largest lag budget `check --lag` takes.
pub const MAX_LAG: usize = 16;

/// The server state before the clients start, on top of the nodes the
/// recipe model creates itself (the lock's `/locks`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitialState {
    /// Nodes created in this order after the recipe's setup nodes (by a
    /// setup session closed before the clients start).
    pub nodes: Vec<InitialNode>,
    /// Parents whose sequence counter starts at the given value (the next
    /// sequential child gets that number); each parent must exist once the
    /// nodes are created.
    pub sequence_starts: Vec<(Path, i32)>,
    /// Client 0's first session id; client `c` in its `g`-th session has
    /// `first_session + 256 * g + c`.
    pub first_session: SessionId,
}

impl Default for InitialState {
    fn default() -> Self {
        InitialState {
            nodes: Vec::new(),
            sequence_starts: Vec::new(),
            first_session: FIRST_SESSION,
        }
    }
}

/// The largest first session id an initial state may give: every client's
/// 256 session generations still fit in an `i64` above it.
pub const MAX_FIRST_SESSION: i64 = i64::MAX - 256 * 256;

/// Why an initial state cannot be made on a model's setup server; each
/// variant names the entry (its index among the nodes or the sequence
/// starts) so a caller can point at the flag or the key that gave it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InitialStateError {
    #[error("node {path}: {reason}")]
    Node {
        index: usize,
        path: String,
        reason: String,
    },
    #[error("sequence start on {parent}: {reason}")]
    SequenceStart {
        index: usize,
        parent: String,
        reason: String,
    },
    #[error("first session id {first} is outside 2..={MAX_FIRST_SESSION}")]
    FirstSession { first: i64 },
}

impl InitialState {
    /// Nothing beyond the recipe's own setup, and the default session ids.
    pub fn is_default(&self) -> bool {
        *self == InitialState::default()
    }

    /// One line for people: `node /a, container /a/b, /locks next sequence
    /// 7, first session 999`; None for the default state.
    pub fn summary(&self) -> Option<String> {
        if self.is_default() {
            return None;
        }
        let nodes = self.nodes.iter().map(|node| match node.mode {
            CreateMode::Container => format!("container {}", node.path),
            _ => format!("node {}", node.path),
        });
        let starts = self
            .sequence_starts
            .iter()
            .map(|(parent, next)| format!("{parent} next sequence {next}"));
        let first = (self.first_session != FIRST_SESSION)
            .then(|| format!("first session {}", self.first_session.0));
        let parts: Vec<String> = nodes.chain(starts).chain(first).collect();
        Some(parts.join(", "))
    }

    /// Checks that the state can be made on a server holding `existing`
    /// (the paths the recipe's setup creates, `/` included): every node is
    /// persistent or a container, new, and its parent exists before it (the
    /// recipe's setup or an earlier node: parents are never created
    /// implicitly); every sequence start names an existing parent once,
    /// with a counter in `0..=i32::MAX`; the first session id is in
    /// `2..=MAX_FIRST_SESSION`. What passes never makes the model's setup
    /// panic.
    pub fn check_against(&self, existing: &BTreeSet<Path>) -> Result<(), InitialStateError> {
        let first = self.first_session.0;
        if !(2..=MAX_FIRST_SESSION).contains(&first) {
            return Err(InitialStateError::FirstSession { first });
        }
        let mut paths = existing.clone();
        for (index, node) in self.nodes.iter().enumerate() {
            let error = |reason: String| InitialStateError::Node {
                index,
                path: node.path.to_string(),
                reason,
            };
            node_error(node, &paths).map_err(error)?;
            paths.insert(node.path.clone());
        }
        let mut counted = BTreeSet::new();
        for (index, (parent, next)) in self.sequence_starts.iter().enumerate() {
            let error = |reason: &str| InitialStateError::SequenceStart {
                index,
                parent: parent.to_string(),
                reason: reason.to_string(),
            };
            if *next < 0 {
                return Err(error(&format!(
                    "the next sequence number must be in 0..={}, got {next}",
                    i32::MAX
                )));
            }
            if !paths.contains(parent) {
                return Err(error(
                    "no such node before the run (the recipe's setup does not create it; add it as an initial node)",
                ));
            }
            if !counted.insert(parent.clone()) {
                return Err(error("its counter is started twice"));
            }
        }
        Ok(())
    }
}

/// The node path `text` names for an initial state (absolute, valid, not
/// `/`), or why it is not one (the text quoted, clipped).
pub fn node_path(text: &str) -> Result<Path, String> {
    let clip = zk_sim::scenario::clip;
    let path = Path::new(text).map_err(|e| format!("`{}` is not a node path: {e}", clip(text)))?;
    if path.is_root() {
        return Err("`/` always exists: name a node below it".into());
    }
    Ok(path)
}

/// Why `node` cannot be created on a server holding `paths`, if it cannot.
fn node_error(node: &InitialNode, paths: &BTreeSet<Path>) -> Result<(), String> {
    if !matches!(node.mode, CreateMode::Persistent | CreateMode::Container) {
        return Err(format!(
            "{:?} is not persistent or container (an ephemeral node would go with the setup session, a sequential one would get a number in its name)",
            node.mode
        ));
    }
    if paths.contains(&node.path) {
        return Err(
            "exists already (the recipe's setup creates it, or it is given twice)".to_string(),
        );
    }
    match node.path.parent() {
        None => Err("`/` exists already".to_string()),
        Some(parent) if !paths.contains(&parent) => Err(format!(
            "its parent {parent} does not exist (the recipe's setup does not create it, and parents are not created implicitly: add {parent} as a node too, before it)"
        )),
        Some(_) => Ok(()),
    }
}

/// A node that exists before the clients start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitialNode {
    pub path: Path,
    pub data: Vec<u8>,
    /// `Persistent` or `Container` (an ephemeral node would go with the
    /// setup session; a sequential one would get a number in its name).
    pub mode: CreateMode,
}

impl InitialNode {
    pub fn persistent(path: Path) -> InitialNode {
        InitialNode {
            path,
            data: Vec::new(),
            mode: CreateMode::Persistent,
        }
    }

    /// A container: reaped once it had a child and has none left.
    pub fn container(path: Path) -> InitialNode {
        InitialNode {
            path,
            data: Vec::new(),
            mode: CreateMode::Container,
        }
    }
}

impl Setup {
    /// `clients` clients, no faults, sorted getChildren results, one cycle,
    /// nothing on the server beyond the recipe's own setup.
    pub fn new(clients: usize) -> Setup {
        Setup {
            clients,
            faults: FaultBudget::NONE,
            child_order: ChildOrderMode::Sorted,
            symmetry: false,
            ranks: false,
            reduction: true,
            cycles: 1,
            initial: InitialState::default(),
            servers: 1,
            lag: DEFAULT_LAG,
            revalidate: true,
        }
    }

    /// `servers` servers (a leader and followers when more than one).
    pub fn with_servers(mut self, servers: usize) -> Setup {
        self.servers = servers;
        self
    }

    /// A follower lags at most `lag` committed transactions.
    pub fn with_lag(mut self, lag: usize) -> Setup {
        self.lag = lag;
        self
    }

    /// Reconnects wait for the leader's revalidation (true, the default)
    /// or are answered at once (false; see [`Setup::revalidate`]).
    pub fn with_revalidate(mut self, revalidate: bool) -> Setup {
        self.revalidate = revalidate;
        self
    }

    pub fn with_faults(mut self, faults: FaultBudget) -> Setup {
        self.faults = faults;
        self
    }

    pub fn with_symmetry(mut self, symmetry: bool) -> Setup {
        self.symmetry = symmetry;
        self
    }

    pub fn with_ranks(mut self, ranks: bool) -> Setup {
        self.ranks = ranks;
        self
    }

    pub fn with_reduction(mut self, reduction: bool) -> Setup {
        self.reduction = reduction;
        self
    }

    pub fn with_child_order(mut self, child_order: ChildOrderMode) -> Setup {
        self.child_order = child_order;
        self
    }

    /// Each client of a hold workload acquires and releases `cycles` times.
    pub fn with_cycles(mut self, cycles: usize) -> Setup {
        self.cycles = cycles;
        self
    }

    /// Adds a node that exists before the clients start.
    pub fn with_node(mut self, node: InitialNode) -> Setup {
        self.initial.nodes.push(node);
        self
    }

    /// Starts `parent`'s sequence counter at `next`.
    pub fn with_sequence_start(mut self, parent: Path, next: i32) -> Setup {
        self.initial.sequence_starts.push((parent, next));
        self
    }

    /// Numbers client 0's first session `first` (see [`InitialState`]).
    pub fn with_first_session(mut self, first: SessionId) -> Setup {
        self.initial.first_session = first;
        self
    }
}

/// How the server orders getChildren results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChildOrderMode {
    /// Sorted by name: the smallest state space.
    #[default]
    Sorted,
    /// Every order is a separate branch (up to `crate::model::MAX_ENUMERATED_CHILDREN`).
    AllOrders,
}

/// Which canonical form a model explores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Canonical {
    pub symmetry: bool,
    pub ranks: bool,
}

impl Canonical {
    pub fn is_identity(self) -> bool {
        !self.symmetry && !self.ranks
    }
}
