//! A lock on one ephemeral, non-sequential node, `DIR/owner`, with a retry
//! loop: create it; when it exists, watch it and try again when it goes.
//! The node's data is the client's id, so a client can tell its own node.
//! The token is the node's creation zxid (it grows with every holder).
//!
//! Two bugs, each behind a flag of [`Bugs`]:
//! - `gone_means_wait`: when the exists() check finds the node already
//!   gone (its holder released between our create and our check), it waits
//!   for a deletion that has already happened instead of trying again;
//! - `blind_retry`: a create whose reply was lost is sent again without
//!   reading whose node is there; its own node answers NodeExists, and it
//!   waits for itself.

use zkcheck::recipes::zk::{
    Acls, CreateMode, EventType, Path, Reply, Request, ZkError, ANY_VERSION,
};
use zkcheck::recipes::{Input, Outbox, Recipe, Tag};
use zkcheck::shapes::{HoldCall, HoldOutcome};

const CREATE: Tag = Tag(1);
const CHECK: Tag = Tag(2);
const RECOVER: Tag = Tag(3);
const DELETE: Tag = Tag(4);

/// Which mistakes a [`FlagLock`] makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bugs {
    pub gone_means_wait: bool,
    pub blind_retry: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlagLock {
    node: Path,
    id: Vec<u8>,
    bugs: Bugs,
    wanting: bool,
    held: bool,
}

impl FlagLock {
    pub fn new(dir: &Path, id: u64, bugs: Bugs) -> FlagLock {
        FlagLock {
            node: dir.child("owner").expect("a child path"),
            id: id.to_string().into_bytes(),
            bugs,
            wanting: false,
            held: false,
        }
    }

    fn create(&self, out: &mut Outbox<HoldOutcome>) {
        let (path, data) = (self.node.clone(), self.id.clone());
        let mode = CreateMode::Ephemeral;
        out.send(
            CREATE,
            Request::Create {
                path,
                data,
                mode,
                acl: Acls::Open,
            },
        );
    }

    fn check(&self, out: &mut Outbox<HoldOutcome>) {
        let path = self.node.clone();
        out.send(CHECK, Request::Exists { path, watch: true });
    }

    fn recover(&self, out: &mut Outbox<HoldOutcome>) {
        let path = self.node.clone();
        out.send(RECOVER, Request::GetData { path, watch: false });
    }

    fn delete(&self, out: &mut Outbox<HoldOutcome>) {
        let path = self.node.clone();
        let version = ANY_VERSION;
        out.send(DELETE, Request::Delete { path, version });
    }

    fn acquired(&mut self, czxid: i64, out: &mut Outbox<HoldOutcome>) {
        self.held = true;
        out.emit(HoldOutcome::exclusive(czxid));
    }

    fn reply(&mut self, tag: Tag, result: Result<Reply, ZkError>, out: &mut Outbox<HoldOutcome>) {
        use ZkError::{ConnectionLoss, NoNode, NodeExists};
        match (tag, result) {
            (CREATE, Ok(Reply::Created { stat, .. })) => self.acquired(stat.czxid, out),
            (CREATE, Err(NodeExists)) => self.check(out),
            (CREATE, Err(ConnectionLoss)) if self.bugs.blind_retry => self.create(out),
            (CREATE, Err(ConnectionLoss)) | (RECOVER, Err(ConnectionLoss)) => self.recover(out),
            (RECOVER, Ok(Reply::Data { data, stat })) if data == self.id => {
                self.acquired(stat.czxid, out)
            }
            (RECOVER, Ok(_)) | (RECOVER, Err(NoNode)) => self.create(out),
            (CHECK, Ok(Reply::Exists(Some(_)))) => {} // its watch wakes us
            (CHECK, Ok(Reply::Exists(None))) if self.bugs.gone_means_wait => {}
            (CHECK, Ok(Reply::Exists(None))) => self.create(out),
            (CHECK, Err(ConnectionLoss)) => self.check(out),
            (DELETE, Err(ConnectionLoss)) => self.delete(out),
            (DELETE, Ok(_)) | (DELETE, Err(NoNode)) => out.emit(HoldOutcome::Released),
            (_, result) => {
                self.wanting = false;
                out.emit(HoldOutcome::Failed(format!("{tag:?}: {result:?}")));
            }
        }
    }
}

impl Recipe for FlagLock {
    type Call = HoldCall;
    type Outcome = HoldOutcome;

    fn handle(&mut self, input: Input<HoldCall>, out: &mut Outbox<HoldOutcome>) {
        match input {
            Input::Call(HoldCall::Acquire) => {
                self.wanting = true;
                self.create(out);
            }
            Input::Call(HoldCall::Release) => {
                (self.wanting, self.held) = (false, false);
                self.delete(out);
            }
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Watch(event) if self.wanting && !self.held => match event.event_type {
                EventType::NodeDeleted => self.create(out),
                _ => self.check(out), // created again: watch it
            },
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
