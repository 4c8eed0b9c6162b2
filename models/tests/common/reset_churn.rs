//! TEST FIXTURE, not a shipped recipe: the reset-churn latch of issue 40
//! (item 4), a leader latch that deletes and re-creates its node on every
//! reconnect (`Disconnected` then `SyncConnected` in the same session), as
//! Curator's LeaderLatch resets on RECONNECTED, although its ephemeral node
//! survived with the session. Each reset sends it to the back of the line.
//!
//! `Volunteer` creates an ephemeral-sequential node `DIR/n-<id>-`; after a
//! lost create reply it lists `DIR` and looks for its prefix before
//! creating again. The lowest node leads (token: its sequence number); the
//! others watch the next lower node (`exists`) and list again when it goes.
//! After an expiry it starts over in the new session. `Resign` deletes the
//! node.
//!
//! - `reset`: resets on every reconnect while it waits (the bug: churn
//!   beyond what the faults explain, which `node_churn` judges);
//! - `reset_reports`: the same, and the recipe states its own invariant:
//!   each reset is reported as `Observation::Violated` of
//!   `node_kept_across_reconnects` (the sans-IO property hook);
//! - `fixed`: keeps its node across reconnects.

use zk_models::{ClientContext, HoldCalls, RecipeEntry, RecipeKind, Variant};
use zk_recipes::election::ElectionCall;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, Path, Reply, Request, SessionEvent, SessionId, ZkError, ANY_VERSION,
};
use zk_recipes::{FencingToken, Hold, Input, Observation, Observe, Outbox, Recipe, Tag};

const CREATE: Tag = Tag(1);
const FIND: Tag = Tag(2);
const LIST: Tag = Tag(3);
const WATCH: Tag = Tag(4);
const RESET: Tag = Tag(5);
const RESIGN: Tag = Tag(6);

/// The invariant `reset_reports` states and reports broken.
pub const INVARIANT: &str = "node_kept_across_reconnects";

/// The registry entry: `reset_latch` with variants `reset`,
/// `reset_reports` and `fixed`.
pub fn entry() -> RecipeEntry {
    let variant = |name: &str, about: &str, reset: bool, report: bool| {
        let calls = HoldCalls::new(ElectionCall::Volunteer, ElectionCall::Resign);
        Variant::hold(name, about, calls, move |c: &ClientContext| {
            ResetLatch::new(c.path.clone(), c.unique_id, reset, report)
        })
        .needs_existing_path()
    };
    RecipeEntry::new("reset_latch", RecipeKind::Election, "/latch")
        .variant(variant(
            "reset",
            "re-creates its node on every reconnect",
            true,
            false,
        ))
        .variant(variant(
            "reset_reports",
            "re-creates its node on every reconnect and reports it",
            true,
            true,
        ))
        .variant(variant(
            "fixed",
            "keeps its node across reconnects",
            false,
            false,
        ))
}

/// What the latch tells the application.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LatchOutcome {
    Elected {
        token: i64,
    },
    Resigned,
    Lost,
    Failed(ZkError),
    /// The latch's own invariant broke.
    Violated {
        detail: String,
    },
}

impl Observe for LatchOutcome {
    const INVARIANTS: &'static [&'static str] = &[INVARIANT];

    fn observe(&self) -> Observation {
        match self {
            LatchOutcome::Elected { token } => Observation::Acquired {
                hold: Hold::Exclusive,
                token: FencingToken(*token),
            },
            LatchOutcome::Resigned => Observation::Released,
            LatchOutcome::Lost => Observation::Lost,
            LatchOutcome::Failed(error) => Observation::Failed {
                reason: format!("{error:?}"),
            },
            LatchOutcome::Violated { detail } => Observation::Violated {
                property: INVARIANT.to_string(),
                detail: detail.clone(),
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResetLatch {
    dir: Path,
    prefix: String,
    /// The bug: reset on every reconnect.
    reset: bool,
    /// Report each reset as the latch's own invariant broken.
    report: bool,
    session: Option<SessionId>,
    disconnected: bool,
    volunteering: bool,
    /// A reset's delete is in flight: listings answer nothing meanwhile.
    resetting: bool,
    node: Option<Path>,
    leads: bool,
}

impl ResetLatch {
    pub fn new(dir: Path, unique_id: u64, reset: bool, report: bool) -> ResetLatch {
        ResetLatch {
            dir,
            prefix: format!("n-{unique_id:016x}-"),
            reset,
            report,
            session: None,
            disconnected: false,
            volunteering: false,
            resetting: false,
            node: None,
            leads: false,
        }
    }

    fn create(&mut self, out: &mut Outbox<LatchOutcome>) {
        let path = self.dir.child(&self.prefix).expect("a valid name");
        let mode = CreateMode::EphemeralSequential;
        out.send(
            CREATE,
            Request::Create {
                path,
                data: Vec::new(),
                mode,
                acl: Acls::Open,
            },
        );
    }

    fn list(&self, tag: Tag, out: &mut Outbox<LatchOutcome>) {
        let path = self.dir.clone();
        out.send(tag, Request::GetChildren { path, watch: false });
    }

    fn delete(&self, tag: Tag, out: &mut Outbox<LatchOutcome>) {
        if let Some(path) = &self.node {
            let (path, version) = (path.clone(), ANY_VERSION);
            out.send(tag, Request::Delete { path, version });
        }
    }

    /// Leads or waits behind the next lower node.
    fn decide(&mut self, children: &[String], out: &mut Outbox<LatchOutcome>) {
        let Some(mine) = self.node.as_ref().map(|n| n.name().to_string()) else {
            return;
        };
        if self.resetting || self.leads {
            return;
        }
        let sequence = |name: &str| zk_models::sequence_suffix(name).unwrap_or(u32::MAX);
        let own = sequence(&mine);
        let below = children
            .iter()
            .filter(|name| sequence(name) < own)
            .max_by_key(|name| sequence(name));
        match below {
            None => {
                self.leads = true;
                out.emit(LatchOutcome::Elected {
                    token: i64::from(own),
                });
            }
            Some(lower) => {
                let path = self.dir.child(lower).expect("a child name");
                out.send(WATCH, Request::Exists { path, watch: true });
            }
        }
    }

    /// After a lost create reply: our node if the create was applied.
    fn found(&mut self, children: &[String], out: &mut Outbox<LatchOutcome>) {
        match children.iter().find(|name| name.starts_with(&self.prefix)) {
            Some(name) => {
                self.node = Some(self.dir.child(name).expect("a child name"));
                self.decide(children, out);
            }
            None => self.create(out),
        }
    }

    fn reply(&mut self, tag: Tag, result: Result<Reply, ZkError>, out: &mut Outbox<LatchOutcome>) {
        match (tag, result) {
            (CREATE, Ok(Reply::Created { path, .. })) => {
                self.node = Some(path);
                self.resetting = false;
                self.list(LIST, out);
            }
            (CREATE, Err(ZkError::ConnectionLoss)) => self.list(FIND, out),
            (FIND, Ok(Reply::Children(children))) => self.found(&children, out),
            (LIST, Ok(Reply::Children(children))) => self.decide(&children, out),
            (FIND | LIST, Err(ZkError::ConnectionLoss)) => self.list(tag, out),
            (WATCH, Ok(Reply::Exists(None))) | (WATCH, Err(ZkError::ConnectionLoss)) => {
                self.list(LIST, out)
            }
            (RESET, Ok(_) | Err(ZkError::NoNode)) => {
                self.node = None;
                self.create(out);
            }
            (RESET | RESIGN, Err(ZkError::ConnectionLoss)) => self.delete(tag, out),
            (RESIGN, Ok(_) | Err(ZkError::NoNode)) => self.resigned(out),
            (_, Err(ZkError::SessionExpired)) => {}
            (_, Err(error)) => {
                self.volunteering = false;
                out.emit(LatchOutcome::Failed(error));
            }
            (_, Ok(_)) => {}
        }
    }

    fn resigned(&mut self, out: &mut Outbox<LatchOutcome>) {
        self.node = None;
        self.leads = false;
        self.volunteering = false;
        self.resetting = false;
        out.emit(LatchOutcome::Resigned);
    }

    fn session(&mut self, event: SessionEvent, out: &mut Outbox<LatchOutcome>) {
        match event {
            SessionEvent::Disconnected => self.disconnected = true,
            SessionEvent::Connected { session_id } if self.session == Some(session_id) => {
                let waiting = self.volunteering && !self.leads && self.node.is_some();
                if self.disconnected && self.reset && waiting && !self.resetting {
                    self.reset(out);
                }
                self.disconnected = false;
            }
            SessionEvent::Connected { session_id } => {
                let rejoin = self.session.is_some() && self.volunteering;
                self.session = Some(session_id);
                self.disconnected = false;
                if rejoin {
                    self.node = None;
                    self.resetting = false;
                    self.create(out);
                }
            }
            SessionEvent::Expired => self.expired(out),
        }
    }

    /// The reset: delete our node, then create a new one.
    fn reset(&mut self, out: &mut Outbox<LatchOutcome>) {
        if self.report {
            let node = self
                .node
                .as_ref()
                .map(|n| n.to_string())
                .unwrap_or_default();
            out.emit(LatchOutcome::Violated {
                detail: format!("re-creating {node} after a reconnect in the same session"),
            });
        }
        self.resetting = true;
        self.delete(RESET, out);
    }

    fn expired(&mut self, out: &mut Outbox<LatchOutcome>) {
        self.node = None;
        self.resetting = false;
        if self.leads {
            self.leads = false;
            self.volunteering = false;
            out.emit(LatchOutcome::Lost);
        }
    }
}

impl Recipe for ResetLatch {
    type Call = ElectionCall;
    type Outcome = LatchOutcome;

    fn handle(&mut self, input: Input<ElectionCall>, out: &mut Outbox<LatchOutcome>) {
        match input {
            Input::Call(ElectionCall::Volunteer) => {
                self.volunteering = true;
                self.create(out);
            }
            Input::Call(ElectionCall::Resign) if self.node.is_some() => self.delete(RESIGN, out),
            Input::Call(ElectionCall::Resign) => self.resigned(out),
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Watch(event) if event.event_type == EventType::NodeDeleted => {
                if self.node.is_some() && !self.leads {
                    self.list(LIST, out);
                }
            }
            Input::Session(event) => self.session(event, out),
            Input::Watch(_) | Input::Timer(_) | Input::WatcherEvent { .. } => {}
        }
    }
}
