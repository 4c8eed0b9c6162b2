//! A counterexample as a replayable schedule: the exact step order, one
//! entry per model action, written as TOML.
//!
//! The simulator's scenario files (`sim/src/scenario`) describe seeded,
//! timed runs and have no step-by-step form, so a schedule is its own small
//! format, one `[[step]]` per action. Operation names follow the stepper
//! (`zk_sim::stepper::Stepper`) and the simulator's fault names ([`OPS`] is
//! the authoritative list, with the fields each takes):
//!
//! | op | meaning | stepper | fields |
//! |---|---|---|---|
//! | `call` | the application calls `call` | `call` | `call` (required) |
//! | `send` | the server applies the next request | `send` | `order` |
//! | `deliver` | the client handles its inbox head | `deliver` | |
//! | `fire_timer` | the earliest timer fires | `fire_next_timer` | |
//! | `reconnect` | reconnect into the session (or learn it expired) at `server` (default 0) | `reconnect` / `reconnect_to` | `session`, `server` |
//! | `reconnect_fails` | a reconnect attempt fails: queued requests fail with ConnectionLoss | `fail_reconnect_attempt` | |
//! | `learn_expiry` | the client learns its session expired, opens `session` at `server` (default 0) | `expire` client side + `new_session` / `new_session_on` | `session`, `server` |
//! | `disconnect` | the connection drops | `disconnect` | |
//! | `lose_reply` | the next request is applied, its reply lost | `apply_then_disconnect` | |
//! | `lose_request` | the next request is lost before the server | `lose_request` | |
//! | `expire` | the server expires the session, its ephemerals deleted in the `order`-th permutation of path order; the client does not know | `expire_on_server_in_order` | `order` |
//! | `deliver_event_early` | the event at inbox `index` overtakes replies | `deliver_at` | `index` (required) |
//! | `spurious_watch` | the `watch`-th armed watch fires for nothing | `fire_armed_watch` | `watch` (required) |
//! | `client_expiry` | a disconnected client gives up on its session (client-side expiry): sees Expired, opens `session` at `server` (default 0); the server keeps the old session | `give_up_session` + `new_session_on` | `session`, `server` |
//! | `expire_abandoned` | the server expires `session`, which `client` gave up on, its ephemerals deleted in the `order`-th permutation | `expire_session_on_server` | `session` (required), `order` |
//! | `leader_loss` | the leader is lost: every connected client is disconnected (no `client`) | `leader_loss` | |
//! | `reap` | the server reaps its empty containers (no `client`) | `reap` | |
//! | `apply` | follower `server` applies its next committed transaction (no `client`; `servers` > 1) | `apply` | `server` (required) |
//!
//! A schedule of a model with an ensemble (`check --servers 2`) says
//! `servers = 2` in its header; client `c` starts on server `c % servers`.
//! A reconnect there waits for the leader's revalidation (as on a real
//! 3.8) unless the header says `revalidate = false` (`check
//! --unrevalidated-reconnects`; written only then).
//! Every step has `op`, and every step but `reap`, `apply` and `leader_loss`
//! the `client` it concerns.
//! Session ids are `256 * (generation + 1) + client + 1` (with the model's
//! default first session id, 257); getChildren results are sorted unless a
//! step says `order` (the n-th permutation).
//!
//! A schedule found from an initial server state (`check --node`,
//! `--container`, `--sequence-start`; [`crate::setup::InitialState`])
//! records it in an optional `[initial]` table, which older files lack
//! (they start from the recipe's setup only):
//!
//! ```toml
//! [initial]
//! first_session = 257            # optional: client 0's first session id
//!
//! [[initial.node]]               # created in this order, parents first
//! path = "/spare"
//! mode = "container"             # or "persistent" (the default)
//! data = "text"                  # optional: a string, or an array of bytes
//!
//! [[initial.sequence_start]]     # the next sequence number `parent` hands out
//! parent = "/locks"
//! next = 2147483647
//! ```
//!
//! A lasso (`check --liveness cycles`, [`crate::lasso`]) says
//! `cycle_start = K` in its header: steps `K..` are a cycle that returns to
//! the state step `K` starts in, the `K` steps before it lead there; its
//! property is `progress` and `expect` is `violation`.
//!
//! Schedule files are user input: [`Schedule::parse`]
//! (`crate::schedule_check`, which needs the registry) refuses unknown keys
//! and values the replay cannot use, with a [`ScheduleError`] naming the
//! file, the line and the dotted key (`clients`, `step[2].op`: the index of
//! a `[[step]]` counts from 0, as in TOML tools).

use crate::action::Action;
use crate::faults::FaultBudget;
use crate::setup::{node_path, InitialNode, InitialState, InitialStateError, MAX_FIRST_SESSION};
use serde::{Deserialize, Serialize};
use zk_recipes::zk::{CreateMode, SessionId};
pub use zk_sim::scenario::clip;
use zk_sim::scenario::ScenarioError;

/// Most clients a model (and so a schedule) may have.
pub const MAX_CLIENTS: usize = 16;

/// Most steps a schedule may have (the checker's counterexamples have tens).
pub const MAX_STEPS: usize = 100_000;

/// The values `expect` may take.
pub const EXPECTS: &[&str] = &["violation", "example"];

/// The text holds a schedule (a top-level `step` array) rather than a
/// scenario. Text that is not valid TOML counts as a schedule when a line
/// opens a `[[step]]` (or sets `step = ...` before any table), so that a
/// broken schedule is reported as one.
pub fn is_schedule_text(text: &str) -> bool {
    match text.parse::<toml::Table>() {
        Ok(table) => table.contains_key("step"),
        Err(_) => {
            let mut top_level = true;
            text.lines().map(str::trim).any(|line| {
                if let Some(header) = line.strip_prefix('[') {
                    top_level = false;
                    // `[[step]]`, also when broken (`[[step]`, `[[ step`).
                    return header.strip_prefix('[').is_some_and(|name| {
                        name.split([']', '#']).next().map(str::trim) == Some("step")
                    });
                }
                top_level
                    && line
                        .split_once('=')
                        .is_some_and(|(key, _)| key.trim().trim_matches('"') == "step")
            })
        }
    }
}

/// The property of a schedule that leads to a shared abstract state (its
/// `state`), not to a violation: `sweep --against-model` writes one for
/// each state the model reaches and the sweep did not.
pub const REACH: &str = "reach";

/// A field a step may carry besides `op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepField {
    Client,
    Call,
    Order,
    Index,
    Watch,
    Session,
    Server,
}

impl StepField {
    pub const ALL: [StepField; 7] = [
        StepField::Client,
        StepField::Call,
        StepField::Order,
        StepField::Index,
        StepField::Watch,
        StepField::Session,
        StepField::Server,
    ];

    /// The field's key in a `[[step]]`.
    pub fn name(self) -> &'static str {
        match self {
            StepField::Client => "client",
            StepField::Call => "call",
            StepField::Order => "order",
            StepField::Index => "index",
            StepField::Watch => "watch",
            StepField::Session => "session",
            StepField::Server => "server",
        }
    }

    pub(crate) fn is_set(self, step: &ScheduleStep) -> bool {
        match self {
            StepField::Client => step.client.is_some(),
            StepField::Call => step.call.is_some(),
            StepField::Order => step.order.is_some(),
            StepField::Index => step.index.is_some(),
            StepField::Watch => step.watch.is_some(),
            StepField::Session => step.session.is_some(),
            StepField::Server => step.server.is_some(),
        }
    }
}

/// One operation a step may name: the fields it needs and those it may take.
#[derive(Clone, Copy, Debug)]
pub struct OpSpec {
    pub name: &'static str,
    pub required: &'static [StepField],
    pub optional: &'static [StepField],
}

impl OpSpec {
    const fn new(
        name: &'static str,
        required: &'static [StepField],
        optional: &'static [StepField],
    ) -> OpSpec {
        OpSpec {
            name,
            required,
            optional,
        }
    }

    pub(crate) fn takes(&self, field: StepField) -> bool {
        self.required.contains(&field) || self.optional.contains(&field)
    }
}

use StepField::{Call, Client, Index, Order, Server, Session, Watch};

/// Every operation (`Action::op_name` writes them, `crate::replay` applies
/// them), with what each reads.
pub const OPS: &[OpSpec] = &[
    OpSpec::new("call", &[Client, Call], &[]),
    OpSpec::new("send", &[Client], &[Order]),
    OpSpec::new("deliver", &[Client], &[]),
    OpSpec::new("fire_timer", &[Client], &[]),
    OpSpec::new("reconnect", &[Client], &[Session, Server]),
    OpSpec::new("reconnect_fails", &[Client], &[]),
    OpSpec::new("learn_expiry", &[Client], &[Session, Server]),
    OpSpec::new("disconnect", &[Client], &[]),
    OpSpec::new("lose_reply", &[Client], &[]),
    OpSpec::new("lose_request", &[Client], &[]),
    OpSpec::new("expire", &[Client], &[Order]),
    OpSpec::new("deliver_event_early", &[Client, Index], &[]),
    OpSpec::new("spurious_watch", &[Client, Watch], &[]),
    OpSpec::new("client_expiry", &[Client], &[Session, Server]),
    OpSpec::new("expire_abandoned", &[Client, Session], &[Order]),
    OpSpec::new("leader_loss", &[], &[]),
    OpSpec::new("reap", &[], &[]),
    OpSpec::new("apply", &[Server], &[]),
];

/// The operation named `op`.
pub fn op_spec(op: &str) -> Option<&'static OpSpec> {
    OPS.iter().find(|spec| spec.name == op)
}

/// A schedule file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    pub recipe: String,
    pub variant: String,
    pub clients: usize,
    /// Acquire/release cycles per client of a hold workload (default 1).
    #[serde(default = "one_cycle", skip_serializing_if = "is_one_cycle")]
    pub cycles: usize,
    /// Servers of the model (default 1; 2: a leader and a follower).
    #[serde(default = "one_cycle", skip_serializing_if = "is_one_cycle")]
    pub servers: usize,
    /// With 2 servers: a reconnect waits for the leader's revalidation
    /// (default true, as on a real 3.8; false: a model checked with
    /// `--unrevalidated-reconnects`, written only then).
    #[serde(default = "revalidated", skip_serializing_if = "is_revalidated")]
    pub revalidate: bool,
    /// The fault budget the model ran with (`KIND=BUDGET,...`).
    pub faults: String,
    /// The property the schedule violates (or exemplifies).
    pub property: String,
    /// Whether the schedule shows a violation or an example.
    pub expect: String,
    /// A lasso (see [`crate::lasso`]): the steps from this index on are a
    /// cycle that returns to the state it starts in; the prefix before it
    /// leads there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_start: Option<usize>,
    /// The server state the clients start from beyond the recipe's setup
    /// (absent: the recipe's setup only, as in files written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<ScheduleInitial>,
    /// With `property = "reach"`: the shared abstract state
    /// ([`zk_sim::abstraction`]) the steps lead to, as 16 hex digits
    /// (`sweep --against-model` writes it for a state no seed reached; a
    /// hash of this binary's build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(rename = "step")]
    pub steps: Vec<ScheduleStep>,
}

fn one_cycle() -> usize {
    1
}

fn revalidated() -> bool {
    true
}

fn is_revalidated(revalidate: &bool) -> bool {
    *revalidate
}

fn is_one_cycle(cycles: &usize) -> bool {
    *cycles == 1
}

/// A schedule's `[initial]` table: an [`InitialState`] as text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleInitial {
    /// Client 0's first session id (absent: the model's default, 257).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_session: Option<i64>,
    #[serde(default, rename = "node", skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<ScheduleNode>,
    #[serde(
        default,
        rename = "sequence_start",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub sequence_starts: Vec<ScheduleSequenceStart>,
}

/// A node of the initial state (`[[initial.node]]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleNode {
    pub path: String,
    /// `persistent` (the default) or `container`.
    #[serde(default = "persistent", skip_serializing_if = "is_persistent")]
    pub mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<NodeData>,
}

/// A node's data: text when it is UTF-8, else its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NodeData {
    Text(String),
    Bytes(Vec<u8>),
}

/// A parent's sequence counter (`[[initial.sequence_start]]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleSequenceStart {
    pub parent: String,
    /// The next sequence number the parent hands out (`0..=i32::MAX`).
    pub next: i64,
}

/// The modes an initial node may have, as a schedule names them.
pub const NODE_MODES: &[&str] = &["persistent", "container"];

fn persistent() -> String {
    NODE_MODES[0].to_string()
}

fn is_persistent(mode: &String) -> bool {
    mode == NODE_MODES[0]
}

impl ScheduleInitial {
    /// The table recording `state`; None for the default state (nothing
    /// to record).
    pub fn of(state: &InitialState) -> Option<ScheduleInitial> {
        if state.is_default() {
            return None;
        }
        let first = state.first_session.0;
        Some(ScheduleInitial {
            first_session: (first != crate::setup::FIRST_SESSION.0).then_some(first),
            nodes: state.nodes.iter().map(ScheduleNode::of).collect(),
            sequence_starts: state
                .sequence_starts
                .iter()
                .map(|(parent, next)| ScheduleSequenceStart {
                    parent: parent.to_string(),
                    next: i64::from(*next),
                })
                .collect(),
        })
    }

    /// The initial state the table describes; on error the dotted key
    /// (`initial.node[0].path`) and the message. What the recipe's setup
    /// creates is not known here: [`InitialState::check_against`] checks
    /// the rest when the schedule is replayed.
    pub fn state(&self) -> Result<InitialState, (String, String)> {
        let mut state = InitialState::default();
        if let Some(first) = self.first_session {
            if !(2..=MAX_FIRST_SESSION).contains(&first) {
                return Err((
                    "initial.first_session".into(),
                    format!("must be in 2..={MAX_FIRST_SESSION} (1 is the setup session's), got {first}"),
                ));
            }
            state.first_session = SessionId(first);
        }
        for (n, node) in self.nodes.iter().enumerate() {
            state.nodes.push(node.node(n)?);
        }
        for (n, start) in self.sequence_starts.iter().enumerate() {
            let key = |field: &str| format!("initial.sequence_start[{n}].{field}");
            let parent = node_path(&start.parent).map_err(|m| (key("parent"), m))?;
            let next = i32::try_from(start.next)
                .ok()
                .filter(|next| *next >= 0)
                .ok_or_else(|| {
                    (
                        key("next"),
                        format!("must be in 0..={}, got {}", i32::MAX, start.next),
                    )
                })?;
            state.sequence_starts.push((parent, next));
        }
        Ok(state)
    }
}

impl ScheduleNode {
    fn of(node: &InitialNode) -> ScheduleNode {
        let mode = match node.mode {
            CreateMode::Container => "container",
            _ => "persistent",
        };
        let data = match String::from_utf8(node.data.clone()) {
            Ok(text) if text.is_empty() => None,
            Ok(text) => Some(NodeData::Text(text)),
            Err(_) => Some(NodeData::Bytes(node.data.clone())),
        };
        ScheduleNode {
            path: node.path.to_string(),
            mode: mode.to_string(),
            data,
        }
    }

    /// The node at index `n` of `[[initial.node]]`.
    fn node(&self, n: usize) -> Result<InitialNode, (String, String)> {
        let key = |field: &str| format!("initial.node[{n}].{field}");
        let path = node_path(&self.path).map_err(|m| (key("path"), m))?;
        let mode = match self.mode.as_str() {
            "persistent" => CreateMode::Persistent,
            "container" => CreateMode::Container,
            other => {
                return Err((
                    key("mode"),
                    format!("`{}` is neither {}", clip(other), NODE_MODES.join(" nor ")),
                ))
            }
        };
        let data = match &self.data {
            None => Vec::new(),
            Some(NodeData::Text(text)) => text.as_bytes().to_vec(),
            Some(NodeData::Bytes(bytes)) => bytes.clone(),
        };
        Ok(InitialNode { path, data, mode })
    }
}

/// The key of `[initial]` an [`InitialStateError`] is about.
pub fn initial_key(error: &InitialStateError) -> String {
    match error {
        InitialStateError::Node { index, .. } => format!("initial.node[{index}].path"),
        InitialStateError::SequenceStart { index, .. } => {
            format!("initial.sequence_start[{index}].parent")
        }
        InitialStateError::FirstSession { .. } => "initial.first_session".into(),
    }
}

/// One step of a schedule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleStep {
    /// The client the step concerns (every op but `reap`, `apply` and
    /// `leader_loss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<usize>,
    pub op: String,
    /// For `call`: the call, as the recipe's call type prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// For `send`: the getChildren order; for `expire`: the order the
    /// session's ephemerals are deleted in (0 or absent: sorted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<u16>,
    /// For `deliver_event_early`: the inbox index of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u8>,
    /// For `spurious_watch`: which armed watch (data, exist, then child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<u8>,
    /// For `learn_expiry`, `client_expiry` (and a `reconnect` that finds
    /// the session expired): the new session's id; for `expire_abandoned`:
    /// the abandoned session's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<i64>,
    /// For `apply`: the follower; for `reconnect` and `learn_expiry`: the
    /// server the client connects to (absent: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<u8>,
}

impl ScheduleStep {
    /// The step for `action`; `call` and `session` filled in by the caller.
    pub fn of(action: Action) -> ScheduleStep {
        let mut step = ScheduleStep {
            client: action.client(),
            op: action.op_name().to_string(),
            ..Default::default()
        };
        match action {
            Action::Send { order, .. }
            | Action::Expire { order, .. }
            | Action::ExpireAbandoned { order, .. }
                if order > 0 =>
            {
                step.order = Some(order)
            }
            Action::Reconnect { server, .. }
            | Action::LearnExpiry { server, .. }
            | Action::ClientExpiry { server, .. }
                if server > 0 =>
            {
                step.server = Some(server)
            }
            Action::Apply { server } => step.server = Some(server),
            Action::Reorder { index, .. } => step.index = Some(index),
            Action::Spurious { watch, .. } => step.watch = Some(watch),
            _ => {}
        }
        step
    }
}

/// A schedule file that cannot be used: the same located error as a
/// scenario's, displayed as `FILE:LINE: key `KEY`: MESSAGE` (keys of steps
/// are `step[n].field`, counting from 0).
pub type ScheduleError = ScenarioError;

/// `client 2, ` for a client's step, nothing for the server's.
pub(crate) fn client_of(client: &Option<usize>) -> String {
    client.map_or_else(String::new, |client| format!("client {client}, "))
}

/// The model run a schedule was found on, as its file records it: the
/// header every schedule a report writes shares.
pub struct FoundOn<'a> {
    /// `recipe/variant`.
    pub model: &'a str,
    pub clients: usize,
    pub cycles: usize,
    pub servers: usize,
    /// Reconnects waited for the leader's revalidation.
    pub revalidate: bool,
    pub faults: &'a FaultBudget,
}

impl FoundOn<'_> {
    /// The schedule of `steps` that shows `property` (`expect`: "violation"
    /// or "example"); `cycle_start` for a lasso.
    pub fn schedule(
        &self,
        property: &str,
        expect: &str,
        cycle_start: Option<usize>,
        steps: Vec<ScheduleStep>,
    ) -> Schedule {
        let (recipe, variant) = self.model.split_once('/').unwrap_or((self.model, ""));
        Schedule {
            recipe: recipe.to_string(),
            variant: variant.to_string(),
            clients: self.clients,
            cycles: self.cycles,
            servers: self.servers,
            revalidate: self.revalidate,
            faults: self.faults.to_string(),
            property: property.to_string(),
            expect: expect.to_string(),
            cycle_start,
            initial: None,
            state: None,
            steps,
        }
    }
}

impl Schedule {
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a schedule always serializes")
    }

    /// Reads a schedule without checking its values (see [`Schedule::parse`]
    /// and [`Schedule::validate`]).
    pub fn from_toml(text: &str) -> Result<Schedule, toml::de::Error> {
        toml::from_str(text)
    }

    /// The shared abstract state a `reach` schedule leads to (None: no
    /// `state`, or not 16 hex digits).
    pub fn expected_state(&self) -> Option<u64> {
        let text = self.state.as_deref()?;
        let digits = text.len() == 16 && text.bytes().all(|b| b.is_ascii_hexdigit());
        digits.then(|| u64::from_str_radix(text, 16).ok()).flatten()
    }

    /// The initial state the schedule records (the default when it has
    /// no `[initial]` table); on error the dotted key and the message.
    pub fn initial_state(&self) -> Result<InitialState, (String, String)> {
        self.initial
            .as_ref()
            .map_or_else(|| Ok(InitialState::default()), ScheduleInitial::state)
    }

    /// The same schedule recording `state` as its initial state (none when
    /// `state` is the default).
    pub fn with_initial_state(mut self, state: &InitialState) -> Schedule {
        self.initial = ScheduleInitial::of(state);
        self
    }

    /// A lasso's cycle has at least one step, and a lasso is a violation.
    pub(crate) fn check_cycle_start(&self) -> Result<(), String> {
        let Some(start) = self.cycle_start else {
            return Ok(());
        };
        if start >= self.steps.len() {
            return Err(format!(
                "the cycle starts at step index {start}, but the schedule has {} step(s): a cycle needs at least one (indices count from 0)",
                self.steps.len()
            ));
        }
        if self.expect != "violation" {
            return Err(format!(
                "a lasso shows a violation, but expect is `{}`",
                clip(&self.expect)
            ));
        }
        Ok(())
    }
}
