//! TEST FIXTURE, not a shipped recipe: a semaphore that counts its leases
//! and then creates its own lease node (issue 40, item 3). It never sorts:
//! an acquire lists `DIR` with a watch and, while it sees fewer children
//! than its leases, creates an ephemeral-sequential `DIR/lease-<id>-` and
//! holds; otherwise it waits for the children to change and counts again.
//! A return deletes its node. The count and the create are two steps: two
//! clients that both count before either creates both hold (one lease too
//! many), a check-then-act the diagnosis names `counted-before-creating`.
//! The names carry the client's id, so they sort by that id, not by their
//! sequence: what an earlier diagnosis took for a name-order bug.

use zk_recipes::semaphore::{SemaphoreCall, SemaphoreError, SemaphoreOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, EventType, Path, Reply, Request, ZkError, ANY_VERSION};
use zk_recipes::{FencingToken, Input, Outbox, Recipe, Tag};

const COUNT: Tag = Tag(1);
const CREATE: Tag = Tag(2);
const DELETE: Tag = Tag(3);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CountingSemaphore {
    dir: Path,
    id: u64,
    leases: usize,
    /// An acquire is counting (it acts on a children event).
    counting: bool,
    node: Option<Path>,
}

impl CountingSemaphore {
    pub fn new(dir: Path, id: u64, leases: u32) -> CountingSemaphore {
        CountingSemaphore {
            dir,
            id,
            leases: leases as usize,
            counting: false,
            node: None,
        }
    }

    fn count(&mut self, out: &mut Outbox<SemaphoreOutcome>) {
        self.counting = true;
        let path = self.dir.clone();
        out.send(COUNT, Request::GetChildren { path, watch: true });
    }

    fn counted(&mut self, children: &[String], out: &mut Outbox<SemaphoreOutcome>) {
        if children.len() >= self.leases {
            return; // its watch wakes it when a lease goes
        }
        self.counting = false;
        let path = self
            .dir
            .child(&format!("lease-{}-", self.id))
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
    }

    fn reply(
        &mut self,
        tag: Tag,
        result: Result<Reply, ZkError>,
        out: &mut Outbox<SemaphoreOutcome>,
    ) {
        match (tag, result) {
            (COUNT, Ok(Reply::Children(children))) => self.counted(&children, out),
            (CREATE, Ok(Reply::Created { path, .. })) => {
                let token = zk_models::sequence_suffix(path.name()).unwrap_or(0);
                self.node = Some(path);
                out.emit(SemaphoreOutcome::Acquired {
                    leases: 1,
                    token: FencingToken(i64::from(token)),
                });
            }
            (DELETE, _) => {
                self.node = None;
                out.emit(SemaphoreOutcome::Returned);
            }
            (_, Err(error)) => {
                self.counting = false;
                out.emit(SemaphoreOutcome::Failed(SemaphoreError::Zk(error)));
            }
            (_, Ok(_)) => {}
        }
    }
}

impl Recipe for CountingSemaphore {
    type Call = SemaphoreCall;
    type Outcome = SemaphoreOutcome;

    fn handle(&mut self, input: Input<SemaphoreCall>, out: &mut Outbox<SemaphoreOutcome>) {
        match input {
            Input::Call(SemaphoreCall::Acquire { .. }) => self.count(out),
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
            Input::Watch(event) => {
                let changed = event.event_type == EventType::NodeChildrenChanged;
                if changed && self.counting {
                    self.count(out);
                }
            }
            Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
