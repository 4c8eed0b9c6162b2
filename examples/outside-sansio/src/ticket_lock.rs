//! A ticket lock: each contender takes a ticket (an ephemeral sequential
//! `DIR/ticket-` node); the lowest ticket is served. A contender that is
//! not served watches a ticket before its own and looks again when it goes.
//! The token is the ticket's sequence number.
//!
//! The bug, behind `watch_first`: every waiting contender watches the
//! ticket being served (the lowest) rather than the one just before its
//! own, so every release wakes every waiter (a herd), though only one can
//! be served next.

use zkcheck::recipes::zk::{
    Acls, CreateMode, EventType, Path, Reply, Request, ZkError, ANY_VERSION,
};
use zkcheck::recipes::{Input, Outbox, Recipe, Tag};
use zkcheck::shapes::{HoldCall, HoldOutcome};

const TAKE: Tag = Tag(1);
const LIST: Tag = Tag(2);
const WATCH: Tag = Tag(3);
const DELETE: Tag = Tag(4);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TicketLock {
    dir: Path,
    watch_first: bool,
    /// Our ticket's name once taken.
    ticket: Option<String>,
    held: bool,
}

impl TicketLock {
    pub fn new(dir: Path, watch_first: bool) -> TicketLock {
        TicketLock {
            dir,
            watch_first,
            ticket: None,
            held: false,
        }
    }

    fn list(&self, out: &mut Outbox<HoldOutcome>) {
        let path = self.dir.clone();
        out.send(LIST, Request::GetChildren { path, watch: false });
    }

    fn fail(&mut self, why: String, out: &mut Outbox<HoldOutcome>) {
        self.ticket = None;
        out.emit(HoldOutcome::Failed(why));
    }

    /// Served, or watch the ticket we wait behind.
    fn decide(&mut self, mut tickets: Vec<String>, out: &mut Outbox<HoldOutcome>) {
        let Some(mine) = self.ticket.clone() else {
            return;
        };
        tickets.sort_by_key(|name| sequence(name));
        match tickets.iter().position(|name| *name == mine) {
            Some(0) => {
                self.held = true;
                out.emit(HoldOutcome::exclusive(sequence(&mine)));
            }
            Some(index) => {
                let behind = if self.watch_first { 0 } else { index - 1 };
                let path = self.dir.child(&tickets[behind]).expect("a child name");
                out.send(WATCH, Request::Exists { path, watch: true });
            }
            None => self.fail(format!("{mine} is gone"), out),
        }
    }
}

/// The 10-digit counter ZooKeeper appends to a sequential node's name.
fn sequence(name: &str) -> i64 {
    name[name.len().saturating_sub(10)..]
        .parse()
        .unwrap_or(i64::MAX)
}

impl Recipe for TicketLock {
    type Call = HoldCall;
    type Outcome = HoldOutcome;

    fn handle(&mut self, input: Input<HoldCall>, out: &mut Outbox<HoldOutcome>) {
        match input {
            Input::Call(HoldCall::Acquire) => {
                let path = self.dir.child("ticket-").expect("a child path");
                let mode = CreateMode::EphemeralSequential;
                let data = Vec::new();
                out.send(
                    TAKE,
                    Request::Create {
                        path,
                        data,
                        mode,
                        acl: Acls::Open,
                    },
                );
            }
            Input::Call(HoldCall::Release) => match self.ticket.take() {
                Some(name) => {
                    self.held = false;
                    let path = self.dir.child(&name).expect("a child path");
                    let version = ANY_VERSION;
                    out.send(DELETE, Request::Delete { path, version });
                }
                None => out.emit(HoldOutcome::Failed("not holding".into())),
            },
            Input::Reply { tag, result } => match (tag, result) {
                (TAKE, Ok(Reply::Created { path, .. })) => {
                    self.ticket = Some(path.name().to_string());
                    self.list(out);
                }
                (LIST, Ok(Reply::Children(tickets))) => self.decide(tickets, out),
                (WATCH, Ok(Reply::Exists(None))) => self.list(out),
                (WATCH, Ok(Reply::Exists(Some(_)))) => {} // its watch wakes us
                (DELETE, Ok(_) | Err(ZkError::NoNode)) => out.emit(HoldOutcome::Released),
                (tag, result) => self.fail(format!("{tag:?}: {result:?}"), out),
            },
            Input::Watch(event) if event.event_type == EventType::NodeDeleted => {
                if self.ticket.is_some() && !self.held {
                    self.list(out);
                }
            }
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Session(_) | Input::Timer(_) => {}
        }
    }
}
