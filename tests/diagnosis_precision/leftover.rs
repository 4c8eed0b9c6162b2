//! TEST FIXTURE, not a shipped recipe: a lock (a 1-lease semaphore's calls)
//! whose timed acquire forgets its node when it gives up (issue 40, item
//! 3). An acquire creates an ephemeral-sequential `DIR/lock-<id>-`, lists
//! `DIR`, holds when its node is first by sequence number, else watches the
//! node right before its own and lists again when it goes. A timed acquire
//! (the call's `timeout_ms`) ends its wait with `TimedOut`; the bug: the
//! node stays (it is neither deleted nor remembered). A later acquire
//! creates another node, and when the node before it is the one its
//! abandoned attempt left, an untimed acquire waits on its own leftover
//! node for ever (`leftover-own-node`).

use zk_recipes::semaphore::{SemaphoreCall, SemaphoreError, SemaphoreOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, EventType, Path, Reply, Request, ZkError, ANY_VERSION};
use zk_recipes::{FencingToken, Input, Outbox, Recipe, Tag, TimerId};

const CREATE: Tag = Tag(1);
const LIST: Tag = Tag(2);
const WATCH: Tag = Tag(3);
const DELETE: Tag = Tag(4);
const GIVE_UP: TimerId = TimerId(1);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeftoverLock {
    dir: Path,
    id: u64,
    /// An acquire is under way (replies and events of a given-up one are
    /// ignored).
    acquiring: bool,
    node: Option<Path>,
    blocker: Option<Path>,
}

impl LeftoverLock {
    pub fn new(dir: Path, id: u64) -> LeftoverLock {
        LeftoverLock {
            dir,
            id,
            acquiring: false,
            node: None,
            blocker: None,
        }
    }

    fn acquire(&mut self, timeout_ms: Option<u64>, out: &mut Outbox<SemaphoreOutcome>) {
        self.acquiring = true;
        let path = self
            .dir
            .child(&format!("lock-{}-", self.id))
            .expect("a valid name");
        let mode = CreateMode::EphemeralSequential;
        let data = Vec::new();
        out.send(
            CREATE,
            Request::Create {
                path,
                data,
                mode,
                acl: Acls::Open,
            },
        );
        if let Some(after_ms) = timeout_ms {
            out.set_timer(GIVE_UP, after_ms);
        }
    }

    fn list(&self, out: &mut Outbox<SemaphoreOutcome>) {
        let path = self.dir.clone();
        out.send(LIST, Request::GetChildren { path, watch: false });
    }

    fn listed(&mut self, children: &[String], out: &mut Outbox<SemaphoreOutcome>) {
        let Some(node) = self.node.clone() else {
            return;
        };
        let mut nodes: Vec<(u32, &String)> = children
            .iter()
            .filter_map(|name| Some((zk_models::sequence_suffix(name)?, name)))
            .collect();
        nodes.sort();
        let Some(at) = nodes.iter().position(|(_, name)| *name == node.name()) else {
            self.give_up(SemaphoreOutcome::Lost, out);
            return;
        };
        match at.checked_sub(1).map(|before| nodes[before].1) {
            None => {
                out.cancel_timer(GIVE_UP);
                self.acquiring = false;
                let token = i64::from(nodes[at].0);
                out.emit(SemaphoreOutcome::Acquired {
                    leases: 1,
                    token: FencingToken(token),
                });
            }
            Some(name) => {
                let path = self.dir.child(name).expect("a child's name");
                self.blocker = Some(path.clone());
                out.send(WATCH, Request::Exists { path, watch: true });
            }
        }
    }

    /// Ends the acquire with `outcome`; the bug: its node stays.
    fn give_up(&mut self, outcome: SemaphoreOutcome, out: &mut Outbox<SemaphoreOutcome>) {
        out.cancel_timer(GIVE_UP);
        self.acquiring = false;
        self.node = None;
        self.blocker = None;
        out.emit(outcome);
    }

    fn reply(
        &mut self,
        tag: Tag,
        result: Result<Reply, ZkError>,
        out: &mut Outbox<SemaphoreOutcome>,
    ) {
        if tag == DELETE {
            self.node = None;
            out.emit(SemaphoreOutcome::Returned);
            return;
        }
        if !self.acquiring {
            return; // the reply of an acquire it gave up
        }
        match (tag, result) {
            (CREATE, Ok(Reply::Created { path, .. })) => {
                self.node = Some(path);
                self.list(out);
            }
            (LIST, Ok(Reply::Children(children))) => self.listed(&children, out),
            (WATCH, Ok(Reply::Exists(None))) => self.list(out),
            (_, Err(error)) => {
                self.give_up(SemaphoreOutcome::Failed(SemaphoreError::Zk(error)), out)
            }
            (_, Ok(_)) => {}
        }
    }
}

impl Recipe for LeftoverLock {
    type Call = SemaphoreCall;
    type Outcome = SemaphoreOutcome;

    fn handle(&mut self, input: Input<SemaphoreCall>, out: &mut Outbox<SemaphoreOutcome>) {
        match input {
            Input::Call(SemaphoreCall::Acquire { timeout_ms, .. }) => self.acquire(timeout_ms, out),
            Input::Call(SemaphoreCall::Return) => match self.node.clone() {
                Some(path) => out.send(
                    DELETE,
                    Request::Delete {
                        path,
                        version: ANY_VERSION,
                    },
                ),
                None => out.emit(SemaphoreOutcome::Returned),
            },
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Timer(GIVE_UP) if self.acquiring => {
                self.give_up(SemaphoreOutcome::TimedOut, out)
            }
            Input::Watch(event) => {
                let deleted = event.event_type == EventType::NodeDeleted;
                if deleted && self.acquiring && event.path.is_some() && event.path == self.blocker {
                    self.blocker = None;
                    self.list(out);
                }
            }
            Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
