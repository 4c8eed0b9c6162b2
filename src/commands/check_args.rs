//! `check`'s flags: the model to check ([`ModelArgs`]: recipe, variant,
//! clients, faults, the ensemble), the search ([`CheckArgs`]: strategy,
//! bounds, outputs) and the initial state ([`InitialArgs`]), each checked
//! into what the checkers take, or an [`InputError`] naming the flag. The
//! floor under every `check` driver (the stateful checker, the cutoff
//! table, the lasso search, the explored world).

use super::lasso::LivenessArg;
use super::Harness;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;
use zk_models::lasso::{LassoOptions, DEFAULT_MAX_STATES};
use zk_models::memory::MemoryBudget;
use zk_models::run::{RunOptions, Strategy};
use zk_models::schedule::{clip, MAX_CLIENTS};
use zk_models::setup::{
    node_path, InitialNode, InitialState, DEFAULT_LAG, MAX_CYCLES, MAX_LAG, MAX_SERVERS,
};
use zk_models::{ChildOrderMode, FaultBudget, ModelVariant, RegistryError, Setup};

/// Clients when `--clients` is not given (and the recipe is not a
/// scenario file, whose own count `check` takes up to
/// `check_async::MAX_SCENARIO_CLIENTS`).
pub const DEFAULT_CLIENTS: usize = 2;

/// Most checker threads (each keeps its own search stack).
const MAX_THREADS: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StrategyArg {
    /// Breadth first (shortest counterexamples when single-threaded).
    Bfs,
    /// Depth first.
    Dfs,
    /// Random walks (needs --depth; stops at --timeout).
    Simulation,
    /// Async recipes: PCT sampling of the server's order and the faults
    /// (--depth d, PCT's depth [default: 3]; --runs N; --seed S).
    Pct,
}

/// What both `check` and `explore` need to build a model.
#[derive(Clone, Debug, clap::Args)]
pub struct ModelArgs {
    /// The recipe (built-in: lock, curator_lock, semaphore, shared_lock,
    /// election, queue, barrier; and any recipe registered by the binary);
    /// `check` also takes a scenario file (`*.toml`): its own world,
    /// explored by re-execution.
    #[arg(value_name = "RECIPE|SCENARIO.toml")]
    pub recipe: String,
    /// The variant: original, fixed (queue: also tutorial_original;
    /// barrier: also original_shared_host) [default: fixed; on a scenario
    /// file, the file's].
    #[arg(long)]
    pub variant: Option<String>,
    /// Number of clients; `check` also takes a range LO..HI (both ends
    /// included): one check per count, and where adding a client stopped
    /// changing the verdicts and diagnoses [default: 2; on a scenario
    /// file, the file's, at most 3].
    #[arg(long, value_name = "N|LO..HI")]
    pub clients: Option<Clients>,
    /// Acquire/release cycles per client (hold recipes: locks, elections,
    /// semaphores); for a queue, the items each consumer takes.
    #[arg(long, default_value_t = 1)]
    pub cycles: usize,
    /// Fault budgets, e.g. `connection-loss=1,expiry=1` (kinds: connection-loss, expiry, reorder, spurious, client-expiry, leader-loss; an explored world's: connection-loss, expiry, pause, and on an ensemble lag-spike, server-crash, server-partition, leader-change, server-freeze).
    #[arg(long, default_value = "none")]
    pub faults: String,
    /// Client symmetry: explore one state of each set of states that differ
    /// only by a renaming of interchangeable clients (same workload; the
    /// recipe declares its renaming and that it is symmetric).
    #[arg(long)]
    pub symmetry: bool,
    /// Rank abstraction: replace zxids and sequence numbers by their ranks,
    /// so a protocol that loops revisits states (the recipe declares its
    /// renaming; it must compare these numbers by order only).
    #[arg(long)]
    pub ranks: bool,
    /// Explore every order of getChildren results instead of sorted order.
    #[arg(long)]
    pub all_orders: bool,
    /// Explore every interleaving: turn off the partial-order reduction
    /// (same verdicts, more states; for measuring what it saves).
    #[arg(long)]
    pub no_reduction: bool,
    /// Servers: 1 (the plain server) or 2 (a leader and a follower that
    /// applies the committed log when the checker chooses: stale reads).
    #[arg(long, default_value_t = 1)]
    pub servers: usize,
    /// With --servers 2: the most committed transactions the follower may
    /// lag; at that lag nothing commits until it applies [default: 2].
    #[arg(long)]
    pub lag: Option<usize>,
    /// With --servers 2: a client that reconnects to a server is answered
    /// there at once from the server's own state, beyond what a real 3.8
    /// does (by default it waits for the leader's revalidation, which
    /// travels behind every commit the leader had when it moved).
    #[arg(long)]
    pub unrevalidated_reconnects: bool,
}

#[derive(clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Longest path explored, in steps (default: unbounded; required for simulation).
    #[arg(long)]
    pub depth: Option<usize>,
    /// Checker threads (BFS paths are shortest only with 1).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    #[arg(long, value_enum, default_value = "bfs")]
    pub strategy: StrategyArg,
    /// Seed of the random walks (simulation) or of PCT's runs (pct).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop after this many seconds (the search is then not exhaustive).
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Print a progress line (states, unique states, depth) to stderr every
    /// this many seconds; 0: never.
    #[arg(long, default_value_t = 10)]
    pub progress: u64,
    /// Directory the counterexample schedules are written to.
    #[arg(long, default_value = "target/zkcheck")]
    pub out: PathBuf,
    /// Also print the example path of each `sometimes` property.
    #[arg(long)]
    pub examples: bool,
    /// Write the check's report into DIR (JSON, HTML, Markdown, JUnit XML):
    /// the verdicts, and each counterexample with the pictures of a run.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// How liveness is judged: `terminal` (stateright's `eventually`, on
    /// terminal paths), or `cycles`: also search for livelocks, fair cycles
    /// in which a call stays pending (reported as lassos).
    #[arg(long, value_enum, default_value = "terminal")]
    pub liveness: LivenessArg,
    /// With --liveness cycles: the most states the lasso search explores
    /// (it keeps about 1.9 KB per state, BENCHMARKS.md; the memory budget
    /// usually stops it first) [default: 5000000].
    #[arg(long, value_name = "N")]
    pub lasso_states: Option<usize>,
    /// Stop each search (the check, the lasso search) when the process
    /// nears this much memory in use, e.g. 512M or 4G (K, M, G, T: powers
    /// of 1024): at two thirds of it, the rest kept for a table that
    /// doubles. The search is then not exhaustive (reason: memory)
    /// [default: half of what the process may use: the smallest of the
    /// physical memory, RLIMIT_AS, RLIMIT_DATA and the cgroup's limit].
    #[arg(long, value_name = "SIZE")]
    pub memory_budget: Option<String>,
    #[command(flatten)]
    pub initial: InitialArgs,
    /// Async recipes: the most choices that leave the default order
    /// (which request the server applies next) in one execution; the
    /// search deepens from 0 to it [default: until exhaustive].
    #[arg(long, value_name = "D")]
    pub max_delays: Option<u8>,
    /// Async recipes: stop after this many executions (the search is then
    /// not exhaustive).
    #[arg(long, value_name = "N")]
    pub max_executions: Option<std::num::NonZeroU32>,
    /// Async recipes with --strategy pct: the runs drawn [default: 1000].
    #[arg(long, value_name = "N")]
    pub runs: Option<std::num::NonZeroU32>,
    /// Explored worlds (async recipes, scenario files): the points of each
    /// duration's range tried: 1 its minimum, 2 both ends, 3 the ends and
    /// the middle, up to 5 [default: 2].
    #[arg(long, value_name = "N")]
    pub duration_points: Option<u8>,
    /// Explored worlds: the runtime (madsim) seeds to search under, one
    /// whole search each: `S` or `LO..HI` (HI excluded). A seed decides
    /// what the choices do not: the runtime's order among a client's
    /// ready tasks, the branch a `select!` without `biased;` tries first,
    /// getChildren order, session ids, reconnect delays. A sample of
    /// those, not an enumeration; a sweep's failing seed S explores that
    /// seed's [default: 0].
    #[arg(long, value_name = "S|LO..HI")]
    pub runtime_seeds: Option<String>,
}

/// The server state the clients start from (`check` only).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct InitialArgs {
    /// A persistent node that exists before the clients start (repeatable).
    /// Its parent must exist: the recipe's setup creates it, or another
    /// --node/--container gives it (nodes are created in path order).
    #[arg(long = "node", value_name = "PATH")]
    pub nodes: Vec<String>,
    /// A container node that exists before the clients start (repeatable;
    /// as --node; the server reaps it once it had a child and has none).
    #[arg(long = "container", value_name = "PATH")]
    pub containers: Vec<String>,
    /// The next sequence number PATH hands out to a sequential child
    /// (repeatable; N in 0..=2147483647; PATH must exist before the run),
    /// e.g. `/locks=2147483647` for a counter at its end.
    #[arg(long = "sequence-start", value_name = "PATH=N")]
    pub sequence_starts: Vec<String>,
}

/// Bad command-line input, naming the flag.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{flag}: {message}")]
    Flag { flag: &'static str, message: String },
}

fn flag_error(flag: &'static str, message: impl ToString) -> InputError {
    InputError::Flag {
        flag,
        message: message.to_string(),
    }
}

impl ModelArgs {
    /// `--variant`, or its default (`fixed`).
    pub fn variant(&self) -> &str {
        self.variant.as_deref().unwrap_or("fixed")
    }

    /// `--clients`, or its default (2).
    pub fn clients(&self) -> Clients {
        self.clients.unwrap_or(Clients::One(DEFAULT_CLIENTS))
    }

    /// `--lag`, or its default.
    pub fn lag(&self) -> usize {
        self.lag.unwrap_or(DEFAULT_LAG)
    }

    /// The model and its size, or the first bad flag.
    pub fn resolve(&self, harness: &Harness) -> Result<(ModelVariant, Setup), InputError> {
        let model = harness
            .registry
            .model(&self.recipe, self.variant())
            .map_err(|error| match error {
                RegistryError::UnknownRecipe { .. } => flag_error("RECIPE", error),
                _ => flag_error("--variant", error),
            })?;
        if !(1..=MAX_CYCLES).contains(&self.cycles) {
            return Err(flag_error(
                "--cycles",
                format!("must be in 1..={MAX_CYCLES}, got {}", self.cycles),
            ));
        }
        let clients = match self.clients() {
            Clients::One(clients) => clients,
            range @ Clients::Range { .. } => {
                return Err(flag_error(
                    "--clients",
                    format!(
                        "`{range}` is a range, which only `check` takes; give one client count"
                    ),
                ))
            }
        };
        if !(1..=MAX_CLIENTS).contains(&clients) {
            return Err(flag_error(
                "--clients",
                format!("must be in 1..={MAX_CLIENTS}, got {clients}"),
            ));
        }
        let faults: FaultBudget = self
            .faults
            .parse()
            .map_err(|error| flag_error("--faults", error))?;
        if !(1..=MAX_SERVERS).contains(&self.servers) {
            return Err(flag_error(
                "--servers",
                format!(
                    "must be 1 (one server) or {MAX_SERVERS} (a leader and a follower), got {}",
                    self.servers
                ),
            ));
        }
        if let (Some(lag), 1) = (self.lag, self.servers) {
            return Err(flag_error(
                "--lag",
                format!("bounds the follower's lag, and one server has no follower: give it with --servers {MAX_SERVERS} (got --lag {lag})"),
            ));
        }
        if self.unrevalidated_reconnects && self.servers == 1 {
            return Err(flag_error(
                "--unrevalidated-reconnects",
                format!("is about reconnects to a follower, and one server has none: give it with --servers {MAX_SERVERS}"),
            ));
        }
        if !(1..=MAX_LAG).contains(&self.lag()) {
            return Err(flag_error(
                "--lag",
                format!("must be in 1..={MAX_LAG}, got {}", self.lag()),
            ));
        }
        let order = if self.all_orders {
            ChildOrderMode::AllOrders
        } else {
            ChildOrderMode::Sorted
        };
        let setup = Setup::new(clients)
            .with_faults(faults)
            .with_child_order(order)
            .with_symmetry(self.symmetry)
            .with_ranks(self.ranks)
            .with_reduction(!self.no_reduction)
            .with_cycles(self.cycles)
            .with_servers(self.servers)
            .with_lag(self.lag())
            .with_revalidate(!self.unrevalidated_reconnects);
        if let Some(error) = model.canonical_error(&setup) {
            let flag = if self.symmetry {
                "--symmetry"
            } else {
                "--ranks"
            };
            return Err(flag_error(flag, error));
        }
        Ok((model, setup))
    }
}

impl InitialArgs {
    /// The state the flags give, read but not yet checked against the
    /// recipe's setup ([`check_initial`] does).
    pub fn state(&self) -> Result<InitialState, InputError> {
        let mut state = InitialState::default();
        let kinds: [(&'static str, &[String], MakeNode); 2] = [
            ("--node", &self.nodes, InitialNode::persistent),
            ("--container", &self.containers, InitialNode::container),
        ];
        for (flag, values, make) in kinds {
            for value in values {
                state
                    .nodes
                    .push(make(node_path(value).map_err(|m| flag_error(flag, m))?));
            }
        }
        // A parent's path is a prefix of its child's, so it sorts first.
        state
            .nodes
            .sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
        for value in &self.sequence_starts {
            state.sequence_starts.push(sequence_start(value)?);
        }
        Ok(state)
    }
}

/// Builds an initial node of one mode at a path.
type MakeNode = fn(zk_recipes::zk::Path) -> InitialNode;

/// One `--sequence-start PATH=N`.
fn sequence_start(value: &str) -> Result<(zk_recipes::zk::Path, i32), InputError> {
    let flag = "--sequence-start";
    let Some((path, next)) = value.rsplit_once('=') else {
        return Err(flag_error(
            flag,
            format!("`{}`: give PATH=N, e.g. /locks=2147483647", clip(value)),
        ));
    };
    let path = node_path(path).map_err(|m| flag_error(flag, m))?;
    let next = next
        .trim()
        .parse::<i64>()
        .ok()
        .and_then(|next| i32::try_from(next).ok())
        .filter(|next| *next >= 0)
        .ok_or_else(|| {
            flag_error(
                flag,
                format!("`{}`: N must be a number in 0..={}", clip(value), i32::MAX),
            )
        })?;
    Ok((path, next))
}

/// Checks `setup`'s initial state against the recipe's own setup nodes
/// and its canonical form; the error names the flag that gave the entry.
pub fn check_initial(
    model: &ModelVariant,
    setup: &Setup,
    args: &ModelArgs,
) -> Result<(), InputError> {
    zk_models::schedule_check::initial_state_error(model, setup).map_err(|(key, message)| {
        let flag = match initial_node_index(&key).and_then(|n| setup.initial.nodes.get(n)) {
            Some(node) if node.mode == zk_recipes::zk::CreateMode::Container => "--container",
            Some(_) => "--node",
            None => "--sequence-start",
        };
        flag_error(flag, message)
    })?;
    match model.canonical_error(setup) {
        Some(error) if args.symmetry => Err(flag_error("--symmetry", error)),
        Some(error) => Err(flag_error("--ranks", error)),
        None => Ok(()),
    }
}

/// The node index of an `initial.node[N]...` key.
fn initial_node_index(key: &str) -> Option<usize> {
    let rest = key.strip_prefix("initial.node[")?;
    rest.split(']').next()?.parse().ok()
}

impl CheckArgs {
    /// The model and its setup with the initial state, or the first bad flag.
    pub(super) fn resolve(&self, harness: &Harness) -> Result<(ModelVariant, Setup), InputError> {
        let initial = self.initial.state()?;
        let (model, mut setup) = self.model.resolve(harness)?;
        setup.initial = initial;
        check_initial(&model, &setup, &self.model)?;
        Ok((model, setup))
    }

    /// `--memory-budget`, checked against what this process may use; None:
    /// the default budget.
    pub(super) fn memory_budget(&self) -> Result<Option<MemoryBudget>, InputError> {
        self.memory_budget
            .as_deref()
            .map(MemoryBudget::parse)
            .transpose()
            .map_err(|error| flag_error("--memory-budget", error))
    }

    /// The lasso search's bounds, if `--liveness cycles` asks for it.
    pub(super) fn lasso_options(&self) -> Result<Option<LassoOptions>, InputError> {
        let max_states = self.lasso_states.unwrap_or(DEFAULT_MAX_STATES);
        match (self.liveness, self.lasso_states) {
            (LivenessArg::Terminal, Some(_)) => Err(flag_error(
                "--lasso-states",
                "bounds the lasso search: give it with --liveness cycles",
            )),
            (_, Some(0)) => Err(flag_error("--lasso-states", "must be at least 1")),
            (LivenessArg::Terminal, None) => Ok(None),
            (LivenessArg::Cycles, _) => Ok(Some(super::lasso::options(
                max_states,
                self.timeout.map(Duration::from_secs),
                (self.progress > 0).then(|| Duration::from_secs(self.progress)),
                self.memory_budget()?,
            ))),
        }
    }

    pub(super) fn options(&self) -> Result<RunOptions, InputError> {
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return Err(flag_error(
                "--threads",
                format!("{} is outside 1..={MAX_THREADS}", self.threads),
            ));
        }
        if self.depth == Some(0) {
            return Err(flag_error("--depth", "must be at least 1"));
        }
        if self.timeout == Some(0) {
            return Err(flag_error("--timeout", "must be at least 1 second"));
        }
        let strategy = match self.strategy {
            StrategyArg::Bfs => Strategy::Bfs,
            StrategyArg::Dfs => Strategy::Dfs,
            StrategyArg::Simulation if self.depth.is_none() => {
                return Err(flag_error(
                    "--depth",
                    "random simulation needs a depth bound",
                ))
            }
            StrategyArg::Simulation if self.timeout.is_none() => {
                return Err(flag_error(
                    "--timeout",
                    "random simulation needs a time bound",
                ))
            }
            StrategyArg::Simulation => Strategy::Simulation { seed: self.seed },
            StrategyArg::Pct => {
                return Err(flag_error(
                    "--strategy",
                    "pct samples an async recipe's executions (in the simulating build); a sans-IO recipe is checked as states",
                ))
            }
        };
        Ok(RunOptions {
            strategy,
            threads: self.threads,
            max_depth: self.depth,
            timeout: self.timeout.map(Duration::from_secs),
            progress_every: (self.progress > 0).then(|| Duration::from_secs(self.progress)),
            memory_budget: self.memory_budget()?,
        })
    }
}

/// `--clients`: one count, or an inclusive range `LO..HI` (also written
/// `LO..=HI`) that only `check` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clients {
    One(usize),
    Range { first: usize, last: usize },
}

impl FromStr for Clients {
    type Err = String;

    fn from_str(text: &str) -> Result<Clients, String> {
        let syntax = || {
            format!(
                "`{text}`: expected a client count N or a range LO..HI, both ends included (e.g. 2..5)"
            )
        };
        let count = |word: &str| word.trim().parse::<usize>().map_err(|_| syntax());
        match text.split_once("..") {
            None => Ok(Clients::One(count(text)?)),
            Some((first, last)) => Ok(Clients::Range {
                first: count(first)?,
                last: count(last.strip_prefix('=').unwrap_or(last))?,
            }),
        }
    }
}

impl fmt::Display for Clients {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Clients::One(count) => write!(f, "{count}"),
            Clients::Range { first, last } => write!(f, "{first}..{last}"),
        }
    }
}
