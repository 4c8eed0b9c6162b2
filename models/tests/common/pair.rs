//! TEST FIXTURE, not a shipped recipe: client 0's `Lock` creates two
//! ephemeral nodes, `DIR/a` and `DIR/b`, and holds once both exist; any
//! other client's `Lock` sets an exists watch on each and holds once both
//! are answered. When client 0's session expires, its two ephemerals are
//! deleted in one order or the other, and the watcher hears of them in
//! that order.

use zk_recipes::lock::{LockCall, LockOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_recipes::{FencingToken, Input, Outbox, Recipe, Tag};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pair {
    dir: Path,
    owner: bool,
    answered: u8,
}

impl Pair {
    pub fn new(dir: Path, owner: bool) -> Pair {
        Pair {
            dir,
            owner,
            answered: 0,
        }
    }
}

impl Recipe for Pair {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        match input {
            Input::Call(_) => {
                for (tag, name) in [(Tag(1), "a"), (Tag(2), "b")] {
                    let path = self.dir.child(name).expect("a valid name");
                    let request = if self.owner {
                        Request::Create {
                            path,
                            data: Vec::new(),
                            mode: CreateMode::Ephemeral,
                            acl: Acls::Open,
                        }
                    } else {
                        Request::Exists { path, watch: true }
                    };
                    out.send(tag, request);
                }
            }
            Input::Reply { .. } => {
                self.answered += 1;
                if self.answered == 2 {
                    out.emit(LockOutcome::Acquired {
                        token: FencingToken(0),
                    });
                }
            }
            _ => {}
        }
    }
}
