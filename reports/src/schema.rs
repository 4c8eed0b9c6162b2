//! The report document: what `--report DIR` and `--json` write and what
//! `zkcheck report` reads. Plain data with a version, independent of the
//! simulator's and the model checker's internal types (the command line
//! converts them), so the schema changes only on purpose.
//!
//! Version history (docs/report-schema.md documents every field):
//! - 1: runs, sweeps, model checks and the bug catalog.

use serde::{Deserialize, Serialize};

/// The schema version this crate writes and reads: 2 added the verdict
/// `internal_error` (a run that panicked).
pub const SCHEMA_VERSION: u32 = 2;

/// One report: a single run, a sweep, a model check, a guided campaign or
/// the bug catalog. Exactly one of `runs`, `sweep`, `check`, `catalog`,
/// `fuzz` is the subject (named by `kind`); a sweep, a check or a campaign
/// also carries the runs it shows in full (a sweep: the first failing seed
/// of each bucket; a check: each counterexample replayed on the simulator;
/// a campaign: its first failing run). `coverage`, of any kind, is what
/// the runs covered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// `zkcheck <version>`.
    pub generated_by: String,
    pub kind: ReportKind,
    /// A title for the page: the scenario, recipe or catalog.
    pub title: String,
    /// The command that produced the report, quoted so it pastes.
    pub command: String,
    #[serde(default)]
    pub runs: Vec<Run>,
    #[serde(default)]
    pub sweep: Option<Sweep>,
    #[serde(default)]
    pub check: Option<Check>,
    #[serde(default)]
    pub catalog: Option<Catalog>,
    /// A guided campaign (`zkcheck fuzz --report`), for kind `fuzz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuzz: Option<Fuzz>,
    /// What the runs covered (`sweep --coverage`, `fuzz`): absent when
    /// not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    Run,
    Sweep,
    Check,
    Catalog,
    Fuzz,
}

/// One seeded simulation (or a model counterexample replayed on the
/// simulator's stepper).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// The scenario or schedule file.
    pub scenario: String,
    pub recipe: String,
    pub variant: String,
    /// The seed (None for a replayed schedule).
    pub seed: Option<u64>,
    pub clients: usize,
    pub verdict: Verdict,
    /// The command that reproduces this run, quoted so it pastes.
    pub replay: String,
    #[serde(default)]
    pub violations: Vec<Violation>,
    /// Every event of the run, oldest first (empty when not recorded).
    #[serde(default)]
    pub trace: Vec<TraceEvent>,
    /// Who held what when: one span per acquisition.
    #[serde(default)]
    pub holds: Vec<HoldSpan>,
    pub stats: RunStats,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Violation,
    /// The run could not have failed (no progress) or did not run.
    Error,
    /// The run panicked: an internal error of zkcheck, not a property
    /// violation of the recipe (the trace holds the panic's message).
    InternalError,
}

/// A broken property, with its diagnosis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    /// The property's name (`mutual_exclusion`, `liveness`, ...).
    pub property: String,
    /// `property/mechanism`: short and stable, the bucket a sweep counts
    /// it in (e.g. `liveness/watch-on-deleted-node`).
    pub signature: String,
    /// Simulated time of the event that broke it, in ns.
    pub at_ns: u64,
    /// The oracle's one-line message.
    pub message: String,
    /// The events involved, one line each, oldest first.
    #[serde(default)]
    pub events: Vec<String>,
    /// Why it happened, in words.
    pub diagnosis: Diagnosis,
}

/// Why a property broke: a mechanism with a sentence, and one
/// explanation per client (or node) involved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The mechanism's stable name (the signature's second half).
    pub mechanism: String,
    /// One sentence a reader understands without the trace.
    pub summary: String,
    /// One entry per stuck client, leaked node or holder.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

/// One client's (or node's) part in a diagnosis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The client concerned, if one is.
    pub client: Option<usize>,
    /// The node concerned, if one is.
    pub path: Option<String>,
    /// This finding's own mechanism (a run's stuck clients may differ).
    pub mechanism: String,
    /// What it waits for / what happened to it, in words.
    pub what: String,
    /// Why nothing will change it, in words.
    pub why: String,
    /// Simulated times that matter, in ns, with what happened then.
    #[serde(default)]
    pub moments: Vec<Moment>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moment {
    pub at_ns: u64,
    pub what: String,
}

/// One line of a run's trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceEvent {
    pub at_ns: u64,
    /// The client, or None for the server and the world.
    pub client: Option<usize>,
    pub kind: TraceKind,
    pub text: String,
}

/// What a trace line is; a sequence diagram draws `send` as an arrow from
/// the client to the server, `deliver` from the server to the client,
/// `apply` on the server's lane and the rest on the client's lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    Call,
    Outcome,
    Fault,
    Phase,
    Session,
    Apply,
    Send,
    Deliver,
    Timer,
}

/// One acquisition: a client held a lock, a lease or the leadership from
/// `from_ns` until `until_ns` (None: still held when the run ended).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldSpan {
    pub client: usize,
    pub from_ns: u64,
    pub until_ns: Option<u64>,
    /// The fencing token of the acquisition, if the recipe gives one.
    pub token: Option<i64>,
    /// How it ended: `released`, `lost`, `held at end`.
    pub ended: String,
    /// When the server ended the holder's session while it still held
    /// (from then on it held only in its own belief).
    pub session_ended_ns: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStats {
    pub requests: u64,
    pub messages: u64,
    pub faults: u64,
    pub sim_time_ns: u64,
}

/// A sweep over seeds: failing seeds grouped by signature.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub scenario: String,
    pub recipe: String,
    pub variant: String,
    /// The seed range, `A..B`.
    pub seeds: String,
    pub runs: u64,
    pub passed: u64,
    pub failed: u64,
    /// One bucket per signature, most seeds first. A seed that shows
    /// several signatures (under `--all-violations`) counts in each.
    pub buckets: Vec<Bucket>,
    /// How many of each bucket's lowest failing seeds `first_seeds` keeps
    /// (the rest are counted only); `null` in reports written before
    /// sweeps kept them.
    #[serde(default)]
    pub kept_seeds_per_bucket: Option<u64>,
    /// Why the sweep did not run every seed of its range (shards missing
    /// from a merge, a shard stopped by `--fail-fast`); `null` when it did.
    #[serde(default)]
    pub incomplete: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    pub signature: String,
    /// The mechanism in words (the first seed's diagnosis summary).
    pub summary: String,
    /// Seeds in this bucket.
    pub seeds: u64,
    pub first_seed: u64,
    /// The first seed's replay command.
    pub replay: String,
    /// The bucket's lowest failing seeds, at most the sweep's
    /// `kept_seeds_per_bucket`, in order (`first_seed` first).
    #[serde(default)]
    pub first_seeds: Vec<u64>,
}

/// A model check: state counts and a verdict per property.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub recipe: String,
    pub variant: String,
    pub clients: usize,
    /// Servers of the model: 1 (absent), or an ensemble of a leader and
    /// followers (`check --servers 2`).
    #[serde(default = "one_server", skip_serializing_if = "is_one_server")]
    pub servers: usize,
    /// The fault budget, as given (`connection-loss=1,expiry=1`).
    pub faults: String,
    pub strategy: String,
    pub unique_states: u64,
    pub states: u64,
    /// Every state was visited (no timeout, no depth bound).
    pub exhaustive: bool,
    /// What stopped the search before it visited every state: `timeout`
    /// or `memory` (its memory budget); absent when neither did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    pub properties: Vec<PropertyVerdict>,
}

impl Check {
    /// What stopped a search that was not exhaustive, in words for the
    /// rendered reports (a fixed phrase per known reason: nothing from the
    /// document is echoed).
    pub fn stopped_by_text(&self) -> &'static str {
        match self.stopped_by.as_deref() {
            Some("timeout") => "stopped by its timeout",
            Some("memory") => "stopped by its memory budget",
            Some(_) => "stopped by a bound",
            None => "stopped by a depth bound (or a random-walk strategy)",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PropertyVerdict {
    pub name: String,
    /// `always`, `eventually` or `sometimes`.
    pub expectation: String,
    /// `holds`, `violated`, `example found`, `no example`, `unknown`.
    pub verdict: String,
    /// The counterexample (or example) as numbered steps.
    #[serde(default)]
    pub steps: Vec<String>,
    /// The schedule file it was written to, which `zkcheck replay` runs.
    pub schedule: Option<String>,
}

/// The bug catalog: every known bug, found by simulation and by model
/// checking, and its fix shown to hold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    pub entries: Vec<CatalogEntry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// `bug1`, `bug5a`, ...
    pub bug: String,
    pub title: String,
    pub scenario: String,
    pub recipe: String,
    pub variant: String,
    /// The signature the bug must produce to count as caught.
    pub signature: String,
    pub simulation: SimFinding,
    /// By model checking, when the recipe has a model and the entry names
    /// a property for it.
    pub model: Option<ModelFinding>,
    pub fixed: FixedFinding,
    /// Caught with its own signature, and its fix holds.
    pub ok: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimFinding {
    pub seeds_run: u64,
    /// Seeds that showed the entry's own signature.
    pub seeds_caught: u64,
    pub first_seed: Option<u64>,
    pub replay: Option<String>,
    /// Failing seeds by other signatures (another bug of the same recipe).
    #[serde(default)]
    pub other_signatures: Vec<(String, u64)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFinding {
    pub property: String,
    /// Steps of the shortest counterexample (None: not found).
    pub steps: Option<usize>,
    pub unique_states: u64,
    /// The signatures the counterexample shows when its schedule is
    /// replayed on the simulator's stepper (its diagnosis), in order.
    #[serde(default)]
    pub replayed_signatures: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixedFinding {
    pub variant: String,
    pub seeds_run: u64,
    pub seeds_failed: u64,
    /// Unique states of the fixed variant's model check (None: no model).
    pub model_states: Option<u64>,
    pub model_holds: Option<bool>,
}

/// A guided campaign: its runs, corpus and first failing run (shown in
/// full among the report's runs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fuzz {
    pub scenario: String,
    pub recipe: String,
    pub variant: String,
    pub campaign_seed: u64,
    /// Runs made, the scenario's own seeds among them.
    pub runs: u64,
    pub seed_runs: u64,
    /// Tapes kept because they reached something new.
    pub corpus: u64,
    /// The first run that broke a property (1-based), if one did.
    pub first_failing_run: Option<u64>,
    /// Its tape file, and the command that replays it.
    pub tape: Option<String>,
    pub replay: Option<String>,
    /// Stopped by its time budget before its run budget.
    pub timed_out: bool,
}

/// What a sweep's seeds or a campaign's runs covered: abstract states
/// and steps (see `zk_sim::world::coverage`), the curves of new states per
/// block, and the comparison with a model's reachable set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// What an abstract state keeps, in words.
    pub abstraction: String,
    pub states: u64,
    pub transitions: u64,
    pub features: u64,
    /// One curve per search shown (a sweep: its seeds; a campaign: its
    /// runs, and the scenario's seeds when compared).
    pub curves: Vec<CoverageCurve>,
    /// `sweep --against-model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against_model: Option<ModelCoverage>,
}

/// New abstract states per block of runs, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageCurve {
    /// "seeds 0..2000", "guided, campaign seed 0".
    pub label: String,
    /// Runs (or seeds) per block.
    pub block: u64,
    /// States first reached in each block.
    pub new_states: Vec<u64>,
    /// States reached in all (the sum of `new_states`).
    pub states: u64,
}

/// A sweep's shared abstract states against a model's reachable set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCoverage {
    /// The model: recipe/variant, clients, cycles, fault budget.
    pub model: String,
    pub model_states: u64,
    /// The model's shared states, and how many some run reached.
    pub reachable: u64,
    pub covered: u64,
    /// Shared states the runs reached and the model does not, and the
    /// first of them with their lowest seed.
    pub beyond_model: u64,
    #[serde(default)]
    pub beyond_model_first: Vec<(String, u64)>,
    pub never_reached: u64,
    /// The shortest never-reached states: (state, steps, the command that
    /// replays its schedule if one was written).
    #[serde(default)]
    pub shortest_never_reached: Vec<(String, u64, Option<String>)>,
}

fn one_server() -> usize {
    1
}

fn is_one_server(servers: &usize) -> bool {
    *servers == 1
}
