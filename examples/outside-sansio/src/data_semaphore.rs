//! A semaphore whose leases go by priority: each holder creates an
//! ephemeral sequential `DIR/lease-` node whose data is its priority (a
//! number), lists the directory with a watch, reads every node's data, and
//! holds while its node is among the first `leases`. The token is the
//! node's sequence number.
//!
//! The bug, behind `by_priority`: the nodes are ranked by the priority in
//! their data, so a newcomer with a better priority ranks itself among the
//! first while the holders it passed still hold: one lease too many. The
//! fixed semaphore ranks by sequence number (arrival), and the priority
//! only breaks nothing.

use zkcheck::recipes::observe::Hold;
use zkcheck::recipes::zk::{
    Acls, CreateMode, EventType, Path, Reply, Request, ZkError, ANY_VERSION,
};
use zkcheck::recipes::{FencingToken, Input, Outbox, Recipe, Tag};
use zkcheck::shapes::{HoldCall, HoldOutcome};

const CREATE: Tag = Tag(1);
const LIST: Tag = Tag(2);
const DELETE: Tag = Tag(3);
/// A child's data: `Tag(READ + index)`.
const READ: u32 = 100;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataSemaphore {
    dir: Path,
    leases: usize,
    priority: u64,
    by_priority: bool,
    node: Option<String>,
    held: bool,
    /// The listing being read: each child and its priority once read
    /// (None: not yet answered; a child gone is dropped).
    reading: Vec<(String, Option<u64>)>,
    /// The children changed while we read: list again after deciding.
    changed: bool,
}

impl DataSemaphore {
    pub fn new(dir: Path, leases: u32, priority: u64, by_priority: bool) -> DataSemaphore {
        DataSemaphore {
            dir,
            leases: leases as usize,
            priority,
            by_priority,
            node: None,
            held: false,
            reading: Vec::new(),
            changed: false,
        }
    }

    fn list(&mut self, out: &mut Outbox<HoldOutcome>) {
        self.changed = false;
        let path = self.dir.clone();
        out.send(LIST, Request::GetChildren { path, watch: true });
    }

    fn read_all(&mut self, children: Vec<String>, out: &mut Outbox<HoldOutcome>) {
        self.reading = children.into_iter().map(|c| (c, None)).collect();
        for (index, (child, _)) in self.reading.iter().enumerate() {
            let path = self.dir.child(child).expect("a child name");
            out.send(
                Tag(READ + index as u32),
                Request::GetData { path, watch: false },
            );
        }
    }

    fn read(&mut self, index: usize, priority: Option<u64>, out: &mut Outbox<HoldOutcome>) {
        let Some(entry) = self.reading.get_mut(index) else {
            return;
        };
        entry.1 = Some(priority.unwrap_or(u64::MAX)); // gone: ranks last
        if self.reading.iter().all(|(_, p)| p.is_some()) {
            self.decide(out);
        }
    }

    /// Holds while among the first `leases`; else waits for a change.
    fn decide(&mut self, out: &mut Outbox<HoldOutcome>) {
        let (Some(mine), false) = (self.node.clone(), self.held) else {
            return;
        };
        let mut ranked = std::mem::take(&mut self.reading);
        match self.by_priority {
            true => ranked.sort_by_key(|(name, p)| (p.unwrap_or(u64::MAX), sequence(name))),
            false => ranked.sort_by_key(|(name, _)| sequence(name)),
        }
        match ranked.iter().position(|(name, _)| *name == mine) {
            Some(rank) if rank < self.leases => {
                self.held = true;
                let token = FencingToken(sequence(&mine));
                let hold = Hold::Leases(1);
                out.emit(HoldOutcome::Acquired { hold, token });
            }
            Some(_) if self.changed => self.list(out),
            Some(_) => {} // the children watch wakes us
            None => {
                self.node = None;
                out.emit(HoldOutcome::Failed(format!("{mine} is gone")));
            }
        }
    }
}

/// The 10-digit counter ZooKeeper appends to a sequential node's name.
fn sequence(name: &str) -> i64 {
    name[name.len().saturating_sub(10)..]
        .parse()
        .unwrap_or(i64::MAX)
}

impl Recipe for DataSemaphore {
    type Call = HoldCall;
    type Outcome = HoldOutcome;

    fn handle(&mut self, input: Input<HoldCall>, out: &mut Outbox<HoldOutcome>) {
        match input {
            Input::Call(HoldCall::Acquire) => {
                let path = self.dir.child("lease-").expect("a child path");
                let data = self.priority.to_string().into_bytes();
                let mode = CreateMode::EphemeralSequential;
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
            Input::Call(HoldCall::Release) => match self.node.take() {
                Some(name) => {
                    self.held = false;
                    let path = self.dir.child(&name).expect("a child path");
                    let version = ANY_VERSION;
                    out.send(DELETE, Request::Delete { path, version });
                }
                None => out.emit(HoldOutcome::Failed("not holding".into())),
            },
            Input::Reply { tag, result } => match (tag, result) {
                (CREATE, Ok(Reply::Created { path, .. })) => {
                    self.node = Some(path.name().to_string());
                    self.list(out);
                }
                (LIST, Ok(Reply::Children(children))) => self.read_all(children, out),
                (DELETE, Ok(_) | Err(ZkError::NoNode)) => out.emit(HoldOutcome::Released),
                (Tag(n), Ok(Reply::Data { data, .. })) if n >= READ => {
                    let priority = String::from_utf8_lossy(&data).parse().ok();
                    self.read((n - READ) as usize, priority, out);
                }
                (Tag(n), Err(ZkError::NoNode)) if n >= READ => {
                    self.read((n - READ) as usize, None, out)
                }
                (tag, result) => {
                    self.node = None;
                    out.emit(HoldOutcome::Failed(format!("{tag:?}: {result:?}")));
                }
            },
            Input::Watch(event) if event.event_type == EventType::NodeChildrenChanged => {
                if self.node.is_some() && !self.held {
                    match self.reading.is_empty() {
                        true => self.list(out),
                        false => self.changed = true,
                    }
                }
            }
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
