//! Seed 001's tutorial `Barrier` (extends `SyncPrimitive`), step by step,
//! bugs included.
//!
//! The seed: `enter()` creates `root/<hostname>` EPHEMERAL and loops
//! `getChildren(root, true)` until there are `size` children, waiting on the
//! shared mutex in between; `leave()` deletes `root/<hostname>` and loops
//! `getChildren(root, true)` until there are none. `SyncPrimitive.process()`
//! is both the default watcher and the watcher of every read, and wakes the
//! waiting thread on any event, state events (type None) included.
//!
//! Bugs kept on purpose:
//! - the node is named after the host (known bug 5a): a second member on the
//!   same host fails with NodeExists and the barrier never fills; with the
//!   upstream tutorial's EPHEMERAL_SEQUENTIAL create
//!   ([`TutorialNodeMode::EphemeralSequential`]) both create, but `leave()`
//!   deletes `root/<hostname>`, which does not exist: NoNode;
//! - members re-count the children after each wakeup (known bug 5b): once the
//!   last member has passed and left again, a slower member counts fewer than
//!   `size` and waits forever, and so does the leaver waiting for it;
//! - every ZooKeeper error escapes to the application: a create whose reply
//!   was lost fails `enter()` although the node may exist, and that node then
//!   counts as a member nobody will remove until the session ends.
//!
//! The seed text is cut inside `leave()`; its delete is the upstream
//! tutorial's `zk.delete(root + "/" + name, 0)`.

use super::{BarrierCall, BarrierError, BarrierOutcome};
use crate::recipe::{Input, Outbox, Recipe, Tag};
use crate::zk::Acls;
use crate::zk::{CreateMode, Path, Reply, Request, ZkError, ZkResult};

/// enter(): `zk.create(root + "/" + name, ...)`.
const CREATE: Tag = Tag(1);
/// enter() / leave(): `zk.getChildren(root, true)`.
const READ: Tag = Tag(2);
/// leave(): `zk.delete(root + "/" + name, 0)`.
const DELETE: Tag = Tag(3);

/// How `enter()` creates the member node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TutorialNodeMode {
    /// `CreateMode.EPHEMERAL`, as seed 001 has it.
    Ephemeral,
    /// `CreateMode.EPHEMERAL_SEQUENTIAL`, as the upstream ZooKeeper tutorial has it.
    EphemeralSequential,
}

/// Where the member is; the seed's blocking loops become waiting phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    /// enter(): the create is in flight.
    Creating,
    /// enter(): a read is in flight.
    EnterReading,
    /// enter(): `mutex.wait()`.
    EnterWaiting,
    /// enter() returned true; leave() not called yet.
    Entered,
    /// leave(): the delete is in flight.
    Deleting,
    /// leave(): a read is in flight.
    LeaveReading,
    /// leave(): `mutex.wait()`.
    LeaveWaiting,
}

/// A member of seed 001's tutorial barrier.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OriginalBarrier {
    root: Path,
    size: usize,
    /// The seed's `name`: `InetAddress.getLocalHost().getCanonicalHostName()`.
    host_name: String,
    node_mode: TutorialNodeMode,
    phase: Phase,
}

impl OriginalBarrier {
    /// A member as seed 001 builds it (EPHEMERAL node). `root` must exist;
    /// `host_name` must be a valid node name.
    pub fn new(root: Path, size: usize, host_name: impl Into<String>) -> OriginalBarrier {
        OriginalBarrier::with_node_mode(root, size, host_name, TutorialNodeMode::Ephemeral)
    }

    /// A member whose `enter()` creates its node with `node_mode`.
    pub fn with_node_mode(
        root: Path,
        size: usize,
        host_name: impl Into<String>,
        node_mode: TutorialNodeMode,
    ) -> OriginalBarrier {
        let host_name = host_name.into();
        assert!(
            root.child(&host_name).is_ok(),
            "host name {host_name:?} is not a valid node name"
        );
        OriginalBarrier {
            root,
            size,
            host_name,
            node_mode,
            phase: Phase::Idle,
        }
    }

    /// `root + "/" + name`.
    fn node_path(&self) -> Path {
        self.root
            .child(&self.host_name)
            .expect("checked at construction")
    }

    fn on_call(&mut self, call: BarrierCall, out: &mut Outbox<BarrierOutcome>) {
        match (call, self.phase) {
            // seed 001 enter(): zk.create(root + "/" + name, new byte[0], ..., EPHEMERAL)
            (BarrierCall::Enter, Phase::Idle) => {
                let mode = match self.node_mode {
                    TutorialNodeMode::Ephemeral => CreateMode::Ephemeral,
                    TutorialNodeMode::EphemeralSequential => CreateMode::EphemeralSequential,
                };
                self.phase = Phase::Creating;
                out.send(
                    CREATE,
                    Request::Create {
                        path: self.node_path(),
                        data: Vec::new(),
                        mode,
                        acl: Acls::Open,
                    },
                );
            }
            // seed 001 leave(): zk.delete(root + "/" + name, 0)
            (BarrierCall::Leave, Phase::Entered) => {
                self.phase = Phase::Deleting;
                out.send(
                    DELETE,
                    Request::Delete {
                        path: self.node_path(),
                        version: 0,
                    },
                );
            }
            _ => out.emit(BarrierOutcome::Failed(BarrierError::CallOutOfTurn(call))),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<BarrierOutcome>) {
        let expected = matches!(
            (tag, self.phase),
            (CREATE, Phase::Creating)
                | (READ, Phase::EnterReading | Phase::LeaveReading)
                | (DELETE, Phase::Deleting)
        );
        if !expected {
            // Not a reply this member waits for (cannot happen: one request at a time).
            return;
        }
        let reply = match result {
            Ok(reply) => reply,
            // Any KeeperException escapes enter() / leave().
            Err(error) => return self.fail(error, out),
        };
        match (self.phase, reply) {
            (Phase::Creating, Reply::Created { .. }) => self.read(Phase::EnterReading, out),
            (Phase::Deleting, Reply::Deleted) => self.read(Phase::LeaveReading, out),
            // seed 001 enter(): if (list.size() < size) mutex.wait(); else return true;
            (Phase::EnterReading, Reply::Children(children)) if children.len() < self.size => {
                self.phase = Phase::EnterWaiting
            }
            (Phase::EnterReading, Reply::Children(_)) => {
                self.phase = Phase::Entered;
                out.emit(BarrierOutcome::Entered);
            }
            // seed 001 leave(): if (list.size() > 0) mutex.wait(); else return true;
            (Phase::LeaveReading, Reply::Children(children)) if !children.is_empty() => {
                self.phase = Phase::LeaveWaiting
            }
            (Phase::LeaveReading, Reply::Children(_)) => {
                self.phase = Phase::Idle;
                out.emit(BarrierOutcome::Left);
            }
            _ => self.fail(ZkError::RuntimeInconsistency, out),
        }
    }

    /// seed 001 SyncPrimitive.process(): `mutex.notify()` on any event. Only a
    /// waiting thread wakes; while a read is in flight the event thread blocks
    /// on the mutex and its notify would only repeat news the read returns.
    fn on_wakeup(&mut self, out: &mut Outbox<BarrierOutcome>) {
        match self.phase {
            Phase::EnterWaiting => self.read(Phase::EnterReading, out),
            Phase::LeaveWaiting => self.read(Phase::LeaveReading, out),
            _ => {}
        }
    }

    fn read(&mut self, phase: Phase, out: &mut Outbox<BarrierOutcome>) {
        self.phase = phase;
        out.send(
            READ,
            Request::GetChildren {
                path: self.root.clone(),
                watch: true,
            },
        );
    }

    fn fail(&mut self, error: ZkError, out: &mut Outbox<BarrierOutcome>) {
        self.phase = Phase::Idle;
        out.emit(BarrierOutcome::Failed(BarrierError::Zk(error)));
    }
}

impl Recipe for OriginalBarrier {
    type Call = BarrierCall;
    type Outcome = BarrierOutcome;

    fn handle(&mut self, input: Input<BarrierCall>, out: &mut Outbox<BarrierOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // process() is the default watcher and every read's watcher
            // (`getChildren(root, true)`): no other watcher exists.
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) => self.on_wakeup(out),
            Input::Timer(_) => {}
        }
    }
}

impl crate::rename::Rename for OriginalBarrier {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.host_name = rename_host(r, &self.host_name);
    }
}

/// A host name `host-<client index>` (the model's: one host per client)
/// follows its client; any other name (`host`, shared by every member) is
/// kept.
fn rename_host(r: &crate::rename::Renaming, name: &str) -> String {
    match name.strip_prefix("host-").map(str::parse::<usize>) {
        Some(Ok(client)) if name == format!("host-{client}") => {
            format!("host-{}", r.client(client))
        }
        _ => name.to_owned(),
    }
}

impl crate::rename::RenameRecipe for OriginalBarrier {
    /// The member node is named after the host; with the sequential create
    /// ([`TutorialNodeMode::EphemeralSequential`]) a ranked sequence follows.
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        let at = name.len().saturating_sub(10);
        let (host, sequence) = match name.get(at..).and_then(crate::sequence::parse_sequence) {
            Some(_) if name.is_char_boundary(at) && at > 0 => name.split_at(at),
            _ => (name, ""),
        };
        let renamed = format!("{}{sequence}", rename_host(r, host));
        let at = renamed.len() - sequence.len();
        r.sequence_suffix(parent, &renamed, at)
    }
}
