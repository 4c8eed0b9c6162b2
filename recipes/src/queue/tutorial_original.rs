//! Seed 001's tutorial producer/consumer `Queue extends SyncPrimitive`, step
//! by step, bugs included. Java's blocking calls become one request at a
//! time; an exception that escapes to the application becomes `Failed`.
//!
//! - constructor: `exists(root)`, `create(root)` if missing, errors printed.
//! - `produce`: `create(root/element, value, PERSISTENT_SEQUENTIAL)`; any
//!   error escapes (a ConnectionLoss after the server applied it too).
//! - `consume` (our `Take`): `getChildren(root, true)` (the default watcher);
//!   if empty `mutex.wait()` until the default watcher's `process` notifies
//!   (on ANY event, session state changes included) and loop; else pick the
//!   child with the smallest `Integer(name.substring(7))`, `getData` it and
//!   `delete(path, 0)`. Nothing is caught: a consumer that loses the race for
//!   the head fails with NoNode, and a ConnectionLoss on an applied delete
//!   loses the item.
//! - The tutorial has no non-blocking consume; our `Poll` runs consume's
//!   loop body once and answers `Empty` where consume would wait.

use super::naming::tutorial_min_child;
use super::seed_constructor::SeedConstructor;
use super::{escaped, malformed, QueueCall, QueueFailure, QueueOutcome};
use crate::zk::Acls;
use crate::zk::{CreateMode, Path, Reply, Request, SessionEvent, ZkResult};
use crate::{Input, Outbox, Recipe, Tag};

const PRODUCE: Tag = Tag(3);
const LIST: Tag = Tag(5);
const GET_DATA: Tag = Tag(6);
const DELETE: Tag = Tag(7);

/// The name of queue items before the server's sequence suffix.
pub const ITEM_NAME: &str = "element";

/// The version consume deletes with (`zk.delete(root + "/" + minNode, 0)`).
const DELETE_VERSION: i32 = 0;

/// Seed 001's tutorial `Queue` as a state machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TutorialQueueOriginal {
    root: Path,
    /// The constructor's "create ZK node name" if missing.
    init: SeedConstructor,
    step: Step,
}

/// Where the running call is; each step awaits at most one reply.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    Idle,
    /// A call that arrived before the constructor finished.
    Deferred(QueueCall),
    Produce,
    /// `getChildren(root, true)`; `blocking` is consume vs our poll.
    List {
        blocking: bool,
    },
    /// consume: `mutex.wait()`.
    Wait,
    Read {
        node: Path,
    },
    Delete {
        node: Path,
        data: Vec<u8>,
    },
}

impl TutorialQueueOriginal {
    /// A queue under `root` (`new Queue(address, name)`).
    pub fn new(root: Path) -> Self {
        TutorialQueueOriginal {
            root,
            init: SeedConstructor::NotConnected,
            step: Step::Idle,
        }
    }

    /// True while no call is running.
    pub fn is_idle(&self) -> bool {
        self.step == Step::Idle
    }

    /// True while a consume waits on the mutex.
    pub fn is_waiting(&self) -> bool {
        self.step == Step::Wait
    }

    /// seed 001 SyncPrimitive.process: `mutex.notify()` on any event. Only a
    /// consumer inside `mutex.wait()` hears it; otherwise it is lost.
    fn notify(&mut self, out: &mut Outbox<QueueOutcome>) {
        if self.step == Step::Wait {
            self.list(true, out);
        }
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
            QueueCall::Offer(data) => self.produce(data, out),
            QueueCall::Take => self.list(true, out),
            QueueCall::Poll => self.list(false, out),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        if self.init.is_running() {
            if self.init.on_reply(&self.root, tag, result, out) {
                self.start_deferred(out);
            }
            return;
        }
        match (std::mem::replace(&mut self.step, Step::Idle), tag) {
            (Step::Produce, PRODUCE) => match result {
                Ok(_) => out.emit(QueueOutcome::Offered),
                // Escapes, a ConnectionLoss after the create was applied too.
                Err(error) => out.emit(QueueOutcome::keeper(&error)),
            },
            (Step::List { blocking }, LIST) => self.on_children(blocking, result, out),
            (Step::Read { node }, GET_DATA) => match result {
                // seed 001 consume(): zk.delete(root + "/" + minNode, 0)
                Ok(Reply::Data { data, .. }) => {
                    out.send(
                        DELETE,
                        Request::Delete {
                            path: node.clone(),
                            version: DELETE_VERSION,
                        },
                    );
                    self.step = Step::Delete { node, data };
                }
                // NoNode (another consumer won the head) escapes too.
                other => out.emit(escaped(other)),
            },
            (Step::Delete { data, .. }, DELETE) => match result {
                Ok(_) => out.emit(QueueOutcome::Item(data)),
                // NoNode when another consumer deleted the head first, and
                // ConnectionLoss after an applied delete (the item is lost).
                Err(error) => out.emit(QueueOutcome::keeper(&error)),
            },
            (step, _) => self.step = step, // a reply for no request of ours: ignored
        }
    }

    /// seed 001 produce(): zk.create(root + "/element", value, PERSISTENT_SEQUENTIAL)
    fn produce(&mut self, data: Vec<u8>, out: &mut Outbox<QueueOutcome>) {
        match self.root.child(ITEM_NAME) {
            Ok(path) => {
                out.send(
                    PRODUCE,
                    Request::Create {
                        path,
                        data,
                        mode: CreateMode::PersistentSequential,
                        acl: Acls::Open,
                    },
                );
                self.step = Step::Produce;
            }
            Err(_) => out.emit(malformed(ITEM_NAME)),
        }
    }

    /// seed 001 consume(): List list = zk.getChildren(root, true)
    fn list(&mut self, blocking: bool, out: &mut Outbox<QueueOutcome>) {
        out.send(
            LIST,
            Request::GetChildren {
                path: self.root.clone(),
                watch: true,
            },
        );
        self.step = Step::List { blocking };
    }

    fn on_children(&mut self, blocking: bool, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        let names = match result {
            Ok(Reply::Children(names))
            | Ok(Reply::Children2 {
                children: names, ..
            }) => names,
            other => return out.emit(escaped(other)),
        };
        // seed 001 consume(): the loop `if (tempValue < min)` over substring(7)
        match tutorial_min_child(&names) {
            Ok(Some(min_node)) => match self.root.child(&min_node) {
                Ok(node) => {
                    // seed 001 consume(): zk.getData(root + "/" + minNode, false, stat)
                    out.send(
                        GET_DATA,
                        Request::GetData {
                            path: node.clone(),
                            watch: false,
                        },
                    );
                    self.step = Step::Read { node };
                }
                Err(_) => out.emit(malformed(&min_node)),
            },
            // seed 001 consume(): if (list.size() == 0) mutex.wait()
            Ok(None) if blocking => self.step = Step::Wait,
            Ok(None) => out.emit(QueueOutcome::Empty),
            // new Integer(s.substring(7)) throws on a foreign child.
            Err(bad) => out.emit(QueueOutcome::Failed(QueueFailure::MalformedChild(bad.0))),
        }
    }
}

impl Recipe for TutorialQueueOriginal {
    type Call = QueueCall;
    type Outcome = QueueOutcome;

    fn handle(&mut self, input: Input<QueueCall>, out: &mut Outbox<QueueOutcome>) {
        match input {
            Input::Session(event) => {
                if let SessionEvent::Connected { .. } = event {
                    self.init.on_connected(&self.root, out);
                }
                // The default watcher is SyncPrimitive.process: it notifies too.
                self.notify(out);
            }
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // getChildren(root, true) registers the default watcher: no
            // other watcher exists.
            Input::Watch(_) | Input::WatcherEvent { .. } => self.notify(out),
            Input::Timer(_) => {} // sets no timers
        }
    }
}

impl crate::rename::Rename for TutorialQueueOriginal {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        if let Step::Read { node } | Step::Delete { node, .. } = &mut self.step {
            node.rename(r);
        }
    }
}

impl crate::rename::RenameRecipe for TutorialQueueOriginal {
    /// `element<sequence>`: no id, the sequence ranked.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        match name.starts_with(ITEM_NAME) {
            true => r.sequence_suffix(parent, name, ITEM_NAME.len()),
            false => name.to_owned(),
        }
    }
}
