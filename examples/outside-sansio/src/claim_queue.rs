//! A work queue with claim nodes: an offer creates a persistent sequential
//! `DIR/item-` node holding the item; a take lists the directory, and for
//! the first unclaimed item creates an ephemeral `DIR/claim-<item>` node,
//! reads the item, deletes it, deletes its claim and delivers the item. A
//! claim refused (NodeExists: another consumer has it) moves on to the next
//! item; an empty queue answers Empty.
//!
//! The bug, behind `refused_claim_is_mine`: a claim refused is taken for
//! the consumer's own (as after a lost reply), and a delete that finds the
//! item already gone is taken for success: two consumers deliver the same
//! item.

use zkcheck::recipes::zk::{Acls, CreateMode, Path, Reply, Request, ZkError, ANY_VERSION};
use zkcheck::recipes::{Input, Outbox, Recipe, Tag};
use zkcheck::shapes::{QueueCall, QueueOutcome};

const OFFER: Tag = Tag(1);
const LIST: Tag = Tag(2);
const CLAIM: Tag = Tag(3);
const READ: Tag = Tag(4);
const TAKE: Tag = Tag(5);
const UNCLAIM: Tag = Tag(6);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClaimQueue {
    dir: Path,
    refused_claim_is_mine: bool,
    /// The unclaimed items of the last listing still to try, first first.
    candidates: Vec<String>,
    /// The item being taken and its data once read.
    taking: Option<(String, Option<Vec<u8>>)>,
}

impl ClaimQueue {
    pub fn new(dir: Path, refused_claim_is_mine: bool) -> ClaimQueue {
        ClaimQueue {
            dir,
            refused_claim_is_mine,
            candidates: Vec::new(),
            taking: None,
        }
    }

    fn path(&self, name: &str) -> Path {
        self.dir.child(name).expect("a child name")
    }

    fn send_delete(&self, tag: Tag, name: &str, out: &mut Outbox<QueueOutcome>) {
        let (path, version) = (self.path(name), ANY_VERSION);
        out.send(tag, Request::Delete { path, version });
    }

    /// The unclaimed items of a listing, oldest first.
    fn listed(&mut self, children: Vec<String>, out: &mut Outbox<QueueOutcome>) {
        let claimed = |item: &String| children.contains(&format!("claim-{item}"));
        let mut items: Vec<String> = children
            .iter()
            .filter(|c| c.starts_with("item-") && !claimed(c))
            .cloned()
            .collect();
        items.sort_by_key(|name| sequence(name));
        items.reverse(); // popped from the end
        self.candidates = items;
        self.next(out);
    }

    /// Claims the next candidate, or answers Empty.
    fn next(&mut self, out: &mut Outbox<QueueOutcome>) {
        let Some(item) = self.candidates.pop() else {
            self.taking = None;
            out.emit(QueueOutcome::Empty);
            return;
        };
        let path = self.path(&format!("claim-{item}"));
        self.taking = Some((item, None));
        let (data, mode) = (Vec::new(), CreateMode::Ephemeral);
        out.send(
            CLAIM,
            Request::Create {
                path,
                data,
                mode,
                acl: Acls::Open,
            },
        );
    }

    /// Our claim holds: read the item.
    fn claimed(&mut self, out: &mut Outbox<QueueOutcome>) {
        let Some((item, _)) = &self.taking else {
            return;
        };
        let path = self.path(item);
        out.send(READ, Request::GetData { path, watch: false });
    }

    /// The item is not ours after all: drop our claim, try the next.
    fn lost(&mut self, out: &mut Outbox<QueueOutcome>) {
        if let Some((item, _)) = self.taking.take() {
            self.send_delete(UNCLAIM, &format!("claim-{item}"), out);
        }
        self.next(out);
    }

    /// The item is deleted (by us, or so we believe): deliver it.
    fn took(&mut self, out: &mut Outbox<QueueOutcome>) {
        if let Some((item, Some(data))) = self.taking.take() {
            self.send_delete(UNCLAIM, &format!("claim-{item}"), out);
            out.emit(QueueOutcome::Took(data));
        }
    }

    fn reply(&mut self, tag: Tag, result: Result<Reply, ZkError>, out: &mut Outbox<QueueOutcome>) {
        use ZkError::{NoNode, NodeExists};
        let mine = self.refused_claim_is_mine;
        match (tag, result) {
            (OFFER, Ok(_)) => out.emit(QueueOutcome::Offered),
            (LIST, Ok(Reply::Children(children))) => self.listed(children, out),
            (CLAIM, Ok(_)) => self.claimed(out),
            (CLAIM, Err(NodeExists)) if mine => self.claimed(out),
            (CLAIM, Err(NodeExists)) => self.next(out),
            (READ, Ok(Reply::Data { data, .. })) => {
                if let Some((item, read)) = &mut self.taking {
                    *read = Some(data);
                    let item = item.clone();
                    self.send_delete(TAKE, &item, out);
                }
            }
            (READ, Err(NoNode)) => self.lost(out),
            (TAKE, Ok(_)) => self.took(out),
            (TAKE, Err(NoNode)) if mine => self.took(out),
            (TAKE, Err(NoNode)) => self.lost(out),
            (UNCLAIM, _) => {}
            (tag, result) => {
                self.taking = None;
                out.emit(QueueOutcome::Failed(format!("{tag:?}: {result:?}")));
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

impl Recipe for ClaimQueue {
    type Call = QueueCall;
    type Outcome = QueueOutcome;

    fn handle(&mut self, input: Input<QueueCall>, out: &mut Outbox<QueueOutcome>) {
        match input {
            Input::Call(QueueCall::Offer(data)) => {
                let path = self.path("item-");
                let mode = CreateMode::PersistentSequential;
                out.send(
                    OFFER,
                    Request::Create {
                        path,
                        data,
                        mode,
                        acl: Acls::Open,
                    },
                );
            }
            Input::Call(QueueCall::Take) => {
                let path = self.dir.clone();
                out.send(LIST, Request::GetChildren { path, watch: false });
            }
            Input::Reply { tag, result } => self.reply(tag, result, out),
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
