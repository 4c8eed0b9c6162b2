//! TEST FIXTURE, not a shipped recipe: a lock kept in the data of one
//! persistent node, `DIR/baton` (empty when free, the holder's id when
//! taken). An acquire reads the baton; free, it writes its id at the
//! version read; taken, it sets a watch with a second request (exists) and
//! reads again when the watch fires. A release between the read and the
//! watch is missed: the client waits for a change nobody makes once the
//! others are done. No mechanism names that lost wake-up: the diagnosis
//! must say `undiagnosed` (it once said `waits-on-finished-client`, for a
//! persistent node no client is bound to).

use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Reply, Request, ZkError, ANY_VERSION};
use zk_recipes::{Input, Outbox, Recipe, Tag};
use zkcheck::shapes::{HoldCall, HoldOutcome};

const PREPARE: Tag = Tag(1);
const READ: Tag = Tag(2);
const TAKE: Tag = Tag(3);
const WATCH: Tag = Tag(4);
const FREE: Tag = Tag(5);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadThenWatch {
    node: Path,
    id: Vec<u8>,
    waiting: bool,
}

impl ReadThenWatch {
    pub fn new(dir: &Path, id: u64) -> ReadThenWatch {
        ReadThenWatch {
            node: dir.child("baton").expect("a child path"),
            id: id.to_string().into_bytes(),
            waiting: false,
        }
    }

    fn read(&mut self, out: &mut Outbox<HoldOutcome>) {
        self.waiting = false;
        let path = self.node.clone();
        out.send(READ, Request::GetData { path, watch: false });
    }

    fn reply(&mut self, tag: Tag, result: Result<Reply, ZkError>, out: &mut Outbox<HoldOutcome>) {
        let path = self.node.clone();
        match (tag, result) {
            (PREPARE, Ok(_) | Err(ZkError::NodeExists)) => self.read(out),
            (READ, Ok(Reply::Data { data, stat })) if data.is_empty() => {
                let (data, version) = (self.id.clone(), stat.version);
                out.send(
                    TAKE,
                    Request::SetData {
                        path,
                        data,
                        version,
                    },
                );
            }
            (READ, Ok(_)) => {
                self.waiting = true;
                out.send(WATCH, Request::Exists { path, watch: true });
            }
            (TAKE, Ok(Reply::DataSet(stat))) => out.emit(HoldOutcome::exclusive(stat.mzxid)),
            (TAKE, Err(ZkError::BadVersion)) => self.read(out),
            (WATCH, Ok(_)) => {} // its watch wakes us
            (FREE, Ok(_)) => out.emit(HoldOutcome::Released),
            (tag, result) => out.emit(HoldOutcome::Failed(format!("{tag:?}: {result:?}"))),
        }
    }
}

impl Recipe for ReadThenWatch {
    type Call = HoldCall;
    type Outcome = HoldOutcome;

    fn handle(&mut self, input: Input<HoldCall>, out: &mut Outbox<HoldOutcome>) {
        match input {
            Input::Call(HoldCall::Acquire) => {
                let (path, data) = (self.node.clone(), Vec::new());
                let mode = CreateMode::Persistent;
                out.send(
                    PREPARE,
                    Request::Create {
                        path,
                        data,
                        mode,
                        acl: Acls::Open,
                    },
                );
            }
            Input::Call(HoldCall::Release) => {
                let (path, data, version) = (self.node.clone(), Vec::new(), ANY_VERSION);
                out.send(
                    FREE,
                    Request::SetData {
                        path,
                        data,
                        version,
                    },
                );
            }
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Watch(_) if self.waiting => self.read(out),
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
