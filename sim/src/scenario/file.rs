//! The TOML layout of a scenario file, field for field. Unknown keys are
//! errors; omitted tables take the defaults shown here.
//!
//! ```toml
//! name = "lock-fixed-contention"     # default: the file's stem
//! description = "five clients contend for the lock under faults"
//! recipe = "lock"                    # lock, curator_lock, shared_lock, semaphore, election, queue, barrier
//! variant = "fixed"                  # original, fixed (queue also: tutorial_original; lock also: unsynced)
//! clients = 5
//! seeds = "0..1000"                  # what `sweep` runs without --seeds
//! duration_ms = 20000                # the fault phase
//! heal_ms = 20000                    # the liveness bound after it
//! ensemble = 1                       # servers, odd (1, 3, 5, 7); 3: a leader and two lagging followers
//! expect = "pass"                    # or "violation" (with expect_property = "...")
//!
//! [config]                           # the recipe's construction
//! path = "/locks"
//! parents = ["/locks"]               # persistent nodes created before the run
//!
//! [workload]                         # see world::workloads::WorkloadSpec
//! cycles = 20
//! hold_ms = [1, 10]
//!
//! [timing]                           # see world::WorldConfig
//! session_timeout_ms = 4000
//! latency = { min_us = 200, max_us = 2000 }
//! apply_lag_ms = [0, 5]              # a follower applies a commit this long after it (ensemble > 1 only)
//! tick_time_ms = 200                 # the servers' zoo.cfg tickTime (scripts/zk-server's): sessions expire
//!                                    #   on its ticks (up to one late); on an ensemble, with syncLimit,
//! sync_limit = 10                    #   a lost leader or a partition is noticed 200 × 10 = 2000 ms later
//! election_ms = [200, 650]           # an election after that (measured on 3.8; ensemble > 1 only)
//! revalidate_moves = true            # a moved session is answered once its server applied what the
//!                                    #   leader had when it moved (real 3.8); false: at once (beyond 3.8)
//!
//! [faults]
//! swarm = false                      # true: each seed switches fault kinds on/off and draws their
//!                                    #   rates; with ensemble > 1 (and no server fault scheduled)
//!                                    #   it also draws an odd server count up to `ensemble` and
//!                                    #   a cap on the followers' lag within apply_lag_ms
//! [faults.rates]
//! loss_after_apply = 0.01
//! silences_per_s = 0.05              # connections that go silent (black hole) for down_ms
//! client_expiry = true               # a policy: after session_timeout_ms disconnected the client
//!                                    #   gives up (Expired) and opens a new session, as Curator
//!                                    #   does; the server keeps the old one until its own timeout
//! [[faults.schedule]]                # client faults: disconnect, silent, lose_reply, lose_request
//! at_ms = 500                        #   (down_ms), expire, pause (pause_ms), spurious_watch,
//! client = 1                         #   delay_watches (delay_ms, window_ms), reap
//! fault = "pause"
//! pause_ms = 6000
//! # Ensemble faults (refused unless `ensemble` > 1; they take no `client`):
//! [[faults.schedule]]
//! at_ms = 1000
//! fault = "server_crash"             # its connections drop; restarts after down_ms, caught up
//! server = 1                         # 0..ensemble; server 0 leads at the start
//! down_ms = 2000
//! [[faults.schedule]]
//! at_ms = 4000
//! fault = "partition"                # cut off from the leader for down_ms: stale reads, then
//! server = 2                         #   after detect_ms (default: tick_time_ms × sync_limit) it
//! down_ms = 3000                     #   stops serving; rejoins when the partition heals
//! detect_ms = 500
//! [[faults.schedule]]
//! at_ms = 6000
//! fault = "server_freeze"            # frozen for down_ms (SIGSTOP, a GC pause): answers nothing,
//! server = 0                         #   its connections stay open; its clients leave at their
//! down_ms = 3000                     #   read timeout; past tick_time_ms × sync_limit it closes
//!                                    #   them when it thaws; a frozen leader means an election
//! [[faults.schedule]]
//! at_ms = 8000
//! fault = "lag_spike"                # a follower (not server 0) applies delay_ms later for window_ms
//!                                    #   (from tick_time_ms × sync_limit on it drops out and resyncs)
//! server = 1
//! delay_ms = 300
//! window_ms = 2000
//! [[faults.schedule]]
//! at_ms = 12000
//! fault = "leader_change"            # the leader is lost: no write commits; tick_time_ms × sync_limit
//! window_ms = 500                    #   later every server closes every client connection, and
//!                                    #   window_ms after that the most up-to-date other server leads
//! # A crashed or cut-off leader is noticed the same way (a partitioned
//! # leader: after its detect_ms), then an election of 200 ms; an election
//! # needs a majority of servers up (see world::servers).
//!
//! [properties]
//! check = ["mutual_exclusion", "liveness", "no_leaks"]
//! ```

use crate::faults::{FaultEntry, FaultPlan, FaultRates, MsRange};
use crate::world::workloads::WorkloadSpec;
use crate::world::LatencyModel;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub recipe: String,
    pub variant: String,
    pub clients: usize,
    #[serde(default = "default_seeds")]
    pub seeds: String,
    #[serde(default = "default_duration_ms")]
    pub duration_ms: u64,
    #[serde(default = "default_heal_ms")]
    pub heal_ms: u64,
    /// Servers: 1 (default) applies every change everywhere at once; 3 or
    /// more is a leader and followers that apply the committed log with
    /// their own lag (`timing.apply_lag_ms`).
    #[serde(default = "default_ensemble", skip_serializing_if = "is_one")]
    pub ensemble: usize,
    #[serde(default = "default_expect")]
    pub expect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_property: Option<String>,
    /// The diagnosis a bug's seeds must show to count as caught,
    /// `property/mechanism` (e.g. `liveness/watch-on-deleted-node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_signature: Option<String>,
    /// The properties the `fixed` variant must hold when this scenario is
    /// run with `--variant fixed` (default: the same as `properties.check`);
    /// e.g. a pause scenario asks the fixed lock for the fenced form only.
    /// In a catalog entry that names its fixed variant (`catalog.fixed`),
    /// that variant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_properties: Option<Vec<String>>,
    #[serde(default)]
    pub config: RecipeConfig,
    #[serde(default)]
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub timing: Timing,
    #[serde(default)]
    pub faults: FaultsFile,
    #[serde(default)]
    pub properties: Properties,
    /// A known bug's entry in the catalog (`zkcheck bugs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogSection>,
}

/// `[catalog]`: which known bug a scenario shows, and how the model
/// checker finds it.
///
/// ```toml
/// [catalog]
/// bug = "9"                          # its number in known-bugs.md, or a short name (`crate1`)
/// fixed = "fixed"                    # the variant that must hold (default `fixed`)
/// model = { property = "no_stuck_waiter", clients = 2, faults = "none" }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogSection {
    pub bug: String,
    /// The variant that fixes the bug: its sweep must pass (and its model
    /// hold). Default `fixed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<CatalogModel>,
}

impl CatalogSection {
    /// The variant that must hold: `fixed` unless the entry names another.
    pub fn fixed_variant(&self) -> &str {
        self.fixed.as_deref().unwrap_or("fixed")
    }

    /// The entry's name in the catalog's table and report: `bug9` for a
    /// number (`9`, `5a`), the name itself otherwise (`crate1`).
    pub fn entry_name(&self) -> String {
        match self.bug.starts_with(|c: char| c.is_ascii_digit()) {
            true => format!("bug{}", self.bug),
            false => self.bug.clone(),
        }
    }
}

/// The model check that finds a catalog entry's bug: the property that
/// breaks (or the `sometimes` example that shows), with the model's size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogModel {
    pub property: String,
    #[serde(default = "default_model_clients")]
    pub clients: usize,
    /// Fault budgets as `zkcheck check --faults` takes them.
    #[serde(default = "default_model_faults")]
    pub faults: String,
    #[serde(default)]
    pub all_orders: bool,
    /// Servers of the model (`check --servers`): 1, or 2 for a leader and
    /// a lagging follower.
    #[serde(
        default = "default_model_servers",
        skip_serializing_if = "is_default_model_servers"
    )]
    pub servers: usize,
    /// The follower's lag budget (`check --lag`).
    #[serde(
        default = "default_model_lag",
        skip_serializing_if = "is_default_model_lag"
    )]
    pub lag: usize,
    /// With 2 servers: a reconnect waits for the leader's revalidation, as
    /// on a real 3.8 (the default); false: `check
    /// --unrevalidated-reconnects`, beyond 3.8.
    #[serde(default = "default_model_revalidate", skip_serializing_if = "is_true")]
    pub revalidate: bool,
    /// The model's variant, when it is not the scenario's (a sim variant
    /// with a setting, such as the barrier's shared host, can be a model
    /// variant of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

fn default_model_clients() -> usize {
    2
}

fn default_model_servers() -> usize {
    1
}

fn default_model_revalidate() -> bool {
    true
}

fn default_model_lag() -> usize {
    2
}

fn is_default_model_servers(servers: &usize) -> bool {
    *servers == default_model_servers()
}

fn is_default_model_lag(lag: &usize) -> bool {
    *lag == default_model_lag()
}

fn default_model_faults() -> String {
    "none".to_string()
}

/// The `[faults]` table as written; the validation layer turns its
/// schedule entries into faults, naming the entry's index in errors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultsFile {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<FaultEntry>,
    pub rates: FaultRates,
    /// Draw which fault kinds are on, and their rates, from the seed.
    pub swarm: bool,
}

impl From<&FaultPlan> for FaultsFile {
    fn from(plan: &FaultPlan) -> FaultsFile {
        FaultsFile {
            schedule: plan
                .schedule
                .iter()
                .cloned()
                .map(FaultEntry::from)
                .collect(),
            rates: plan.rates.clone(),
            swarm: plan.swarm,
        }
    }
}

fn default_seeds() -> String {
    "0..100".to_string()
}

fn default_duration_ms() -> u64 {
    20_000
}

fn default_ensemble() -> usize {
    1
}

fn is_one(servers: &usize) -> bool {
    *servers == 1
}

fn default_heal_ms() -> u64 {
    20_000
}

fn default_expect() -> String {
    "pass".to_string()
}

/// How each client's recipe is built.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecipeConfig {
    /// The recipe's directory (lock path, election parent, queue dir,
    /// barrier root); default per recipe.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Persistent nodes created before the run; default per recipe.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parents: Option<Vec<String>>,
    /// Semaphore leases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_leases: Option<u32>,
    /// Barrier size (default: every client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier_size: Option<usize>,
    /// Original barrier: every client on one host (`"shared"`, known bug
    /// 5a) or one host each (`"unique"`, the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<String>,
    /// Original barrier: `"ephemeral"` (seed 001) or `"ephemeral_sequential"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_mode: Option<String>,
    /// Start the directory's sequence counter here (e.g. near 2^31).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_start: Option<i32>,
}

/// The world's timing (see `WorldConfig` for each field's meaning).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timing {
    pub session_timeout_ms: u64,
    pub latency: LatencyModel,
    /// Left out: the client library's own reconnect timing (Java: an
    /// attempt every 1–2 s with one server); written: this delay before
    /// every attempt (`ReconnectTiming::Fixed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconnect_delay_ms: Option<MsRange>,
    /// Left out when written back at its default (a written one is held
    /// to the heal window, `validate/heal.rs`).
    #[serde(skip_serializing_if = "is_default_new_session_delay")]
    pub new_session_delay_ms: MsRange,
    /// Refused on one server; left out when written back at its default.
    #[serde(skip_serializing_if = "is_default_apply_lag")]
    pub apply_lag_ms: MsRange,
    /// The old name of the servers' tickTime: refused, naming
    /// `tick_time_ms` (never written).
    #[serde(skip_serializing)]
    pub expiry_tick_ms: Option<u64>,
    pub reaper_interval_ms: u64,
    pub settle_ms: u64,
    /// The servers' tickTime: sessions expire on its ticks; on an
    /// ensemble, with syncLimit, leader loss and partitions are noticed
    /// tick_time_ms × sync_limit after they happen. `sync_limit` is
    /// refused on one server; both left out when written back at their
    /// defaults.
    #[serde(skip_serializing_if = "is_default_tick_time")]
    pub tick_time_ms: u64,
    #[serde(skip_serializing_if = "is_default_sync_limit")]
    pub sync_limit: u64,
    /// How long an election takes (see `WorldConfig::election_ms`).
    /// Refused on one server; left out when written back at its default.
    #[serde(skip_serializing_if = "is_default_election")]
    pub election_ms: MsRange,
    /// A moved session waits for the leader's revalidation (see
    /// `WorldConfig::revalidate_moves`; default true); written only when
    /// false.
    #[serde(skip_serializing_if = "is_true")]
    pub revalidate_moves: bool,
}

fn is_true(value: &bool) -> bool {
    *value
}

fn is_default_apply_lag(lag: &MsRange) -> bool {
    *lag == crate::world::WorldConfig::default().apply_lag_ms
}

fn is_default_new_session_delay(delay: &MsRange) -> bool {
    *delay == crate::world::WorldConfig::default().new_session_delay_ms
}

fn is_default_tick_time(ms: &u64) -> bool {
    *ms == crate::world::WorldConfig::default().tick_time_ms
}

fn is_default_election(window: &MsRange) -> bool {
    *window == crate::world::WorldConfig::default().election_ms
}

fn is_default_sync_limit(ticks: &u64) -> bool {
    *ticks == crate::world::WorldConfig::default().sync_limit
}

impl Default for Timing {
    fn default() -> Self {
        let world = crate::world::WorldConfig::default();
        Timing {
            session_timeout_ms: world.session_timeout_ms,
            latency: world.latency,
            reconnect_delay_ms: None,
            new_session_delay_ms: world.new_session_delay_ms,
            apply_lag_ms: world.apply_lag_ms,
            expiry_tick_ms: None,
            reaper_interval_ms: world.reaper_interval_ms,
            settle_ms: world.settle_ms,
            tick_time_ms: world.tick_time_ms,
            sync_limit: world.sync_limit,
            election_ms: world.election_ms,
            revalidate_moves: world.revalidate_moves,
        }
    }
}

/// Which properties to check, and their parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Properties {
    pub check: Vec<String>,
    /// The most watch notifications one release may cause (`herd` only;
    /// below the number of other clients, or it could never be exceeded).
    #[serde(skip_serializing_if = "is_one_notification")]
    pub herd_bound: u32,
    /// The directory FIFO fairness orders: the recipe's path, the only
    /// value accepted (its default), and only with `fifo` checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fifo_dir: Option<String>,
}

fn is_one_notification(bound: &u32) -> bool {
    *bound == 1
}

impl Default for Properties {
    fn default() -> Self {
        Properties {
            check: Vec::new(),
            herd_bound: 1,
            fifo_dir: None,
        }
    }
}
