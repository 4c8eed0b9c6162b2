//! Seed 000's `DistributedQueue` (ZooKeeper's `recipes/queue`), step by
//! step, bugs included. Java's blocking calls become one request at a time;
//! an exception that escapes to the application becomes `Failed`.
//!
//! - constructor: `exists(dir)`, `create(dir)` if missing, errors logged.
//! - `offer`: `create(dir/qn-, PERSISTENT_SEQUENTIAL)`; on NoNode create the
//!   dir and loop. A ConnectionLoss escapes: the item may be in the queue.
//! - `remove` (our `Poll`) and `take`: `orderedChildren` (getChildren, names
//!   parsed after `qn-` as a Java Long, improper ones skipped), then for each
//!   child in order `getData` and `delete(-1)`, moving to the next on NoNode
//!   without listing again; an empty list is NoSuchElement (`Empty`) for
//!   remove, and for take a wait on a `LatchChildWatcher` that fires on ANY
//!   event, state events included. A ConnectionLoss on the delete escapes
//!   after the server may have deleted the item: the item is lost.

use super::naming::java_long_order;
use super::seed_constructor::SeedConstructor;
use super::{escaped, malformed, QueueCall, QueueFailure, QueueOutcome};
use crate::zk::Acls;
use crate::zk::EventType;
use crate::zk::{CreateMode, Path, Reply, Request, SessionEvent, ZkError, ZkResult, ANY_VERSION};
use crate::{FreshWatchers, Input, Outbox, Recipe, Tag, WatcherId};

const OFFER_CREATE: Tag = Tag(3);
const CREATE_DIR: Tag = Tag(4);
const LIST: Tag = Tag(5);
const GET_DATA: Tag = Tag(6);
const DELETE: Tag = Tag(7);

/// The name prefix of queue items (`private final String prefix = "qn-"`).
pub const ITEM_PREFIX: &str = "qn-";

/// Seed 000's `DistributedQueue` as a state machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DistributedQueueOriginal {
    dir: Path,
    /// The constructor's "add root dir first if not exists".
    init: SeedConstructor,
    step: Step,
    /// The newest `LatchChildWatcher` (take() makes one per loop pass); only
    /// its latch is awaited. Older ones may still be armed: their events
    /// count down latches nobody awaits.
    latch: Option<WatcherId>,
    /// The live LatchChildWatchers (armed, or their listing in flight).
    latches: FreshWatchers,
    /// The newest latch was counted down before take() reached
    /// `childWatcher.await()` (its event overtook the listing's reply):
    /// the await returns at once.
    latch_down: bool,
}

/// Where the running call is; each step awaits at most one reply.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    Idle,
    /// A call that arrived before the constructor finished.
    Deferred(QueueCall),
    OfferCreate {
        data: Vec<u8>,
    },
    OfferCreateDir {
        data: Vec<u8>,
    },
    /// `orderedChildren`; `blocking` is take (with a child watch) vs remove.
    List {
        blocking: bool,
    },
    /// take: getChildren said NoNode, so it creates the dir.
    TakeCreateDir,
    /// take: `childWatcher.await()`.
    Wait,
    /// getData of `candidates[0]`; the rest are tried next on NoNode.
    Read {
        blocking: bool,
        candidates: Vec<String>,
    },
    /// delete of `candidates[0]`, whose data was read.
    Delete {
        blocking: bool,
        candidates: Vec<String>,
        data: Vec<u8>,
    },
}

impl DistributedQueueOriginal {
    /// A queue in directory `dir` (`new DistributedQueue(zk, dir, acl)`).
    pub fn new(dir: Path) -> Self {
        DistributedQueueOriginal {
            dir,
            init: SeedConstructor::NotConnected,
            step: Step::Idle,
            latch: None,
            latches: FreshWatchers::default(),
            latch_down: false,
        }
    }

    /// True while no call is running.
    pub fn is_idle(&self) -> bool {
        self.step == Step::Idle
    }

    /// True while a take waits for a child watch.
    pub fn is_waiting(&self) -> bool {
        self.step == Step::Wait
    }

    fn on_call(&mut self, call: QueueCall, out: &mut Outbox<QueueOutcome>) {
        if self.step != Step::Idle {
            out.emit(QueueOutcome::Failed(QueueFailure::Busy));
        } else if !self.init.has_returned() {
            self.step = Step::Deferred(call);
        } else {
            self.start(call, out);
        }
    }

    /// The constructor returned: a call that waited for it runs now.
    fn start_deferred(&mut self, out: &mut Outbox<QueueOutcome>) {
        if let Step::Deferred(call) = std::mem::replace(&mut self.step, Step::Idle) {
            self.start(call, out);
        }
    }

    fn start(&mut self, call: QueueCall, out: &mut Outbox<QueueOutcome>) {
        match call {
            QueueCall::Offer(data) => self.offer_create(data, out),
            QueueCall::Take => self.list(true, out),
            QueueCall::Poll => self.list(false, out),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        if self.init.is_running() {
            if self.init.on_reply(&self.dir, tag, result, out) {
                self.start_deferred(out);
            }
            return;
        }
        match (std::mem::replace(&mut self.step, Step::Idle), tag) {
            (Step::OfferCreate { data }, OFFER_CREATE) => self.on_offer_created(data, result, out),
            (Step::OfferCreateDir { data }, CREATE_DIR) => match result {
                // seed 000 offer(): for(;;) — create the item again
                Ok(_) => self.offer_create(data, out),
                // A NodeExists (another client created the dir first) escapes.
                Err(error) => out.emit(QueueOutcome::keeper(&error)),
            },
            (Step::List { blocking }, LIST) => self.on_children(blocking, result, out),
            (Step::TakeCreateDir, CREATE_DIR) => match result {
                // seed 000 take(): catch NoNode { create(dir); continue; }
                Ok(_) => self.list(true, out),
                Err(error) => out.emit(QueueOutcome::keeper(&error)),
            },
            (
                Step::Read {
                    blocking,
                    candidates,
                },
                GET_DATA,
            ) => match result {
                Ok(Reply::Data { data, .. }) => self.delete(blocking, candidates, data, out),
                // "Another client removed the node first, try next"
                Err(ZkError::NoNode) => self.try_next(blocking, candidates, out),
                other => out.emit(escaped(other)),
            },
            (
                Step::Delete {
                    blocking,
                    candidates,
                    data,
                },
                DELETE,
            ) => match result {
                Ok(_) => out.emit(QueueOutcome::Item(data)),
                // "Another client deleted the node first."
                Err(ZkError::NoNode) => self.try_next(blocking, candidates, out),
                // ConnectionLoss escapes although the delete may be applied: bug 6.
                Err(error) => out.emit(QueueOutcome::keeper(&error)),
            },
            (step, _) => self.step = step, // a reply for no request of ours: ignored
        }
    }

    /// seed 000 offer(): zookeeper.create(dir + "/" + prefix, data, PERSISTENT_SEQUENTIAL)
    fn offer_create(&mut self, data: Vec<u8>, out: &mut Outbox<QueueOutcome>) {
        match self.dir.child(ITEM_PREFIX) {
            Ok(path) => {
                out.send(
                    OFFER_CREATE,
                    Request::Create {
                        path,
                        data: data.clone(),
                        mode: CreateMode::PersistentSequential,
                        acl: Acls::Open,
                    },
                );
                self.step = Step::OfferCreate { data };
            }
            Err(_) => out.emit(malformed(ITEM_PREFIX)),
        }
    }

    fn on_offer_created(
        &mut self,
        data: Vec<u8>,
        result: ZkResult,
        out: &mut Outbox<QueueOutcome>,
    ) {
        match result {
            Ok(_) => out.emit(QueueOutcome::Offered),
            // seed 000 offer(): catch NoNode { zookeeper.create(dir, PERSISTENT) }
            Err(ZkError::NoNode) => {
                out.send(CREATE_DIR, create_dir(&self.dir));
                self.step = Step::OfferCreateDir { data };
            }
            // ConnectionLoss escapes although the item may be in the queue: a
            // retrying application duplicates it (bug 6).
            Err(error) => out.emit(QueueOutcome::keeper(&error)),
        }
    }

    /// seed 000 orderedChildren(watcher): take passes a new LatchChildWatcher,
    /// remove passes none.
    fn list(&mut self, blocking: bool, out: &mut Outbox<QueueOutcome>) {
        let request = Request::GetChildren {
            path: self.dir.clone(),
            watch: blocking,
        };
        if blocking {
            // LatchChildWatcher childWatcher = new LatchChildWatcher()
            let latch = self.latches.make();
            self.latch = Some(latch);
            self.latch_down = false;
            out.send_watched(LIST, request, latch);
        } else {
            out.send(LIST, request);
        }
        self.step = Step::List { blocking };
    }

    fn on_children(&mut self, blocking: bool, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        if blocking && result.is_err() {
            // The failed listing registered no watch: its latch is gone.
            if let Some(latch) = self.latch.take() {
                self.latches.release(latch);
            }
        }
        match result {
            Ok(Reply::Children(names))
            | Ok(Reply::Children2 {
                children: names, ..
            }) => {
                let candidates = java_long_order(&names, ITEM_PREFIX);
                if !candidates.is_empty() {
                    self.read(blocking, candidates, out);
                } else if blocking && self.latch_down {
                    // childWatcher.await() returns at once; take() loops.
                    self.list(true, out);
                } else if blocking {
                    // seed 000 take(): if (orderedChildren.size() == 0) childWatcher.await()
                    self.step = Step::Wait;
                } else {
                    // seed 000 remove(): throw NoSuchElementException; poll() returns null
                    out.emit(QueueOutcome::Empty);
                }
            }
            Err(ZkError::NoNode) if blocking => {
                // seed 000 take(): catch NoNode { zookeeper.create(dir, PERSISTENT); continue; }
                out.send(CREATE_DIR, create_dir(&self.dir));
                self.step = Step::TakeCreateDir;
            }
            // seed 000 remove(): catch NoNode { throw new NoSuchElementException() }
            Err(ZkError::NoNode) => out.emit(QueueOutcome::Empty),
            other => out.emit(escaped(other)),
        }
    }

    /// seed 000 take()/remove(): for (headNode : orderedChildren.values()) getData(dir/headNode)
    fn read(&mut self, blocking: bool, candidates: Vec<String>, out: &mut Outbox<QueueOutcome>) {
        match self.dir.child(&candidates[0]) {
            Ok(path) => {
                out.send(GET_DATA, Request::GetData { path, watch: false });
                self.step = Step::Read {
                    blocking,
                    candidates,
                };
            }
            Err(_) => out.emit(malformed(&candidates[0])),
        }
    }

    /// seed 000 take()/remove(): zookeeper.delete(path, -1); return data
    fn delete(
        &mut self,
        blocking: bool,
        candidates: Vec<String>,
        data: Vec<u8>,
        out: &mut Outbox<QueueOutcome>,
    ) {
        match self.dir.child(&candidates[0]) {
            Ok(path) => {
                out.send(
                    DELETE,
                    Request::Delete {
                        path,
                        version: ANY_VERSION,
                    },
                );
                self.step = Step::Delete {
                    blocking,
                    candidates,
                    data,
                };
            }
            Err(_) => out.emit(malformed(&candidates[0])),
        }
    }

    /// "We don't call getChildren again until we have tried the rest of the
    /// nodes in sequence order"; after the last one, the while(true) loop lists again.
    fn try_next(
        &mut self,
        blocking: bool,
        mut candidates: Vec<String>,
        out: &mut Outbox<QueueOutcome>,
    ) {
        candidates.remove(0);
        if candidates.is_empty() {
            self.list(blocking, out);
        } else {
            self.read(blocking, candidates, out);
        }
    }
}

fn create_dir(dir: &Path) -> Request {
    Request::Create {
        path: dir.clone(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    }
}

impl Recipe for DistributedQueueOriginal {
    type Call = QueueCall;
    type Outcome = QueueOutcome;

    fn handle(&mut self, input: Input<QueueCall>, out: &mut Outbox<QueueOutcome>) {
        match input {
            Input::Session(SessionEvent::Connected { .. }) => {
                self.init.on_connected(&self.dir, out)
            }
            // The queue registers no default watcher: the application does.
            Input::Session(_) => {}
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // LatchChildWatcher.process counts down on every event, a state
            // event (type None: Disconnected, Expired) included, and take()
            // loops to getChildren again. Events for latches nobody awaits
            // any more are lost.
            Input::WatcherEvent { watcher, event } => {
                if event.event_type != EventType::None {
                    self.latches.release(watcher); // one-shot: fired
                }
                if self.latch == Some(watcher) {
                    match self.step {
                        Step::Wait => self.list(true, out),
                        Step::List { blocking: true } => self.latch_down = true,
                        _ => {}
                    }
                }
            }
            // No read arms the default watcher (the application's).
            Input::Watch(_) => {}
            Input::Timer(_) => {} // sets no timers
        }
    }
}

impl crate::rename::Rename for DistributedQueueOriginal {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        let dir = &self.dir;
        if let Step::Read { candidates, .. } | Step::Delete { candidates, .. } = &mut self.step {
            for name in candidates.iter_mut() {
                *name = r.name(dir, name);
            }
        }
    }
}

impl crate::rename::RenameRecipe for DistributedQueueOriginal {
    /// `qn-<sequence>`: no id, the sequence ranked.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        match name.starts_with(ITEM_PREFIX) {
            true => r.sequence_suffix(parent, name, ITEM_PREFIX.len()),
            false => name.to_owned(),
        }
    }
}
