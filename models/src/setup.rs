//! [`Setup`]: the size of a model, shared by every recipe module: how many
//! clients, which faults with which budgets, how getChildren orders results,
//! how many acquire/release cycles each client makes, and the server state
//! the clients start from ([`InitialState`]).

use crate::faults::FaultBudget;
use crate::model::ChildOrderMode;
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
