//! A fault script: sessions, each connected directly to the server or
//! through the fault proxy, and the steps they take, faults included, plus
//! expectations on the real server's outcomes (so a case cannot pass by
//! both sides doing nothing). Paths use the conformance placeholder root
//! `~` (see `conformance_support::script`).
//!
//! The builder checks that a script makes sense: requests only on sessions
//! whose link is up (or whose handle knows it expired), faults only when
//! there is something to break, healing only what is broken.

use std::fmt;
use zk_recipes::zk::{KeeperState, Request, ZkError};

use crate::conformance_support::script::Brief;

/// How a session reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Direct,
    /// Through the fault proxy: every fault step hits every such session.
    Proxied,
}

/// One step of a fault script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `session` sends `request` and gets its reply.
    Apply { session: usize, request: Request },
    /// The proxied sessions' connections drop (the clients notice at once)
    /// and they cannot reconnect until `Heal`.
    Cut,
    /// The network to the proxied sessions goes silent: nobody is told; the
    /// clients notice through their ping timeout. Lasts until `Heal`.
    Partition,
    /// `session` (proxied) sends `request`, which is lost on its way; then
    /// the connection drops: ConnectionLoss, not applied. Cut off until `Heal`.
    RequestLost { session: usize, request: Request },
    /// `session` (proxied) sends `request`; the server applies it, its reply
    /// is lost, then the connection drops: ConnectionLoss, yet applied.
    /// Cut off until `Heal`.
    ReplyLost { session: usize, request: Request },
    /// Time passes until the server has expired the cut-off sessions.
    Expire,
    /// The network heals: each cut-off client reconnects into its session
    /// (re-registering its watches) or learns that it expired.
    Heal,
}

/// What a case insists the real server's outcome of a step was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    Ok,
    Err(ZkError),
    /// `session` saw exactly `count` node events at this step.
    NodeEvents {
        session: usize,
        count: usize,
    },
    /// `session` saw exactly these state changes, in order, at this step.
    States {
        session: usize,
        states: Vec<KeeperState>,
    },
    /// An `exists` found the node (true) or found none (false).
    Exists(bool),
}

/// Where a proxied session stands, as the builder tracks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    Up,
    CutOff { expired: bool },
    Expired,
}

/// A named fault script.
#[derive(Clone, Debug)]
pub struct FaultScript {
    pub name: String,
    pub links: Vec<Link>,
    /// Session timeout of the proxied sessions (direct ones get a long one).
    pub proxied_timeout_ms: u64,
    pub steps: Vec<Step>,
    /// (step index, expectation on the live outcome of that step)
    pub expects: Vec<(usize, Expect)>,
    standing: Standing,
}

/// Proxied sessions' timeout unless a script sets one.
pub const DEFAULT_PROXIED_TIMEOUT_MS: u64 = 4_000;

/// The shortest proxied timeout a script with `Expire` may use.
pub const MIN_EXPIRY_TIMEOUT_MS: u64 = 6_000;

impl FaultScript {
    /// Session 0 is direct (it sets up the root and reads the tree after);
    /// the others are as `links` says (`links[0]` must be `Direct`).
    pub fn new(name: &str, links: &[Link]) -> FaultScript {
        assert_eq!(links.first(), Some(&Link::Direct), "session 0 is direct");
        assert!(
            links.contains(&Link::Proxied),
            "a fault script needs a proxied session"
        );
        FaultScript {
            name: name.to_string(),
            links: links.to_vec(),
            proxied_timeout_ms: DEFAULT_PROXIED_TIMEOUT_MS,
            steps: Vec::new(),
            expects: Vec::new(),
            standing: Standing::Up,
        }
    }

    pub fn proxied_timeout_ms(mut self, timeout_ms: u64) -> FaultScript {
        self.proxied_timeout_ms = timeout_ms;
        self
    }

    pub fn is_proxied(&self, session: usize) -> bool {
        self.links[session] == Link::Proxied
    }

    /// Session `session` sends `request`.
    pub fn on(self, session: usize, request: Request) -> FaultScript {
        assert!(session < self.links.len(), "no session {session}");
        assert!(
            !self.is_proxied(session) || !matches!(self.standing, Standing::CutOff { .. }),
            "step {}: session {session} is cut off (heal first)",
            self.steps.len()
        );
        self.push(Step::Apply { session, request })
    }

    pub fn cut(self) -> FaultScript {
        self.break_link(Step::Cut)
    }

    pub fn partition(self) -> FaultScript {
        self.break_link(Step::Partition)
    }

    pub fn request_lost(self, session: usize, request: Request) -> FaultScript {
        assert!(
            self.is_proxied(session),
            "only a proxied session's request can be lost"
        );
        self.break_link(Step::RequestLost { session, request })
    }

    pub fn reply_lost(self, session: usize, request: Request) -> FaultScript {
        assert!(
            self.is_proxied(session),
            "only a proxied session's reply can be lost"
        );
        self.break_link(Step::ReplyLost { session, request })
    }

    pub fn expire(mut self) -> FaultScript {
        assert!(
            self.proxied_timeout_ms >= MIN_EXPIRY_TIMEOUT_MS,
            "an expiring script needs a proxied timeout of at least {MIN_EXPIRY_TIMEOUT_MS} ms \
             (see live_side: the heal must beat the client's own expiry deadline)"
        );
        assert_eq!(
            self.standing,
            Standing::CutOff { expired: false },
            "step {}: only cut-off sessions expire",
            self.steps.len()
        );
        self.standing = Standing::CutOff { expired: true };
        self.push(Step::Expire)
    }

    pub fn heal(mut self) -> FaultScript {
        self.standing = match self.standing {
            Standing::CutOff { expired: false } => Standing::Up,
            Standing::CutOff { expired: true } => Standing::Expired,
            other => panic!("step {}: nothing to heal ({other:?})", self.steps.len()),
        };
        self.push(Step::Heal)
    }

    /// The last step succeeded.
    pub fn ok(self) -> FaultScript {
        self.expect(Expect::Ok)
    }

    /// The last step failed with `error`.
    pub fn err(self, error: ZkError) -> FaultScript {
        self.expect(Expect::Err(error))
    }

    /// The last step, an `exists`, found the node.
    pub fn present(self) -> FaultScript {
        self.expect(Expect::Exists(true))
    }

    /// The last step, an `exists`, found no node.
    pub fn absent(self) -> FaultScript {
        self.expect(Expect::Exists(false))
    }

    /// `session` saw `count` node events at the last step.
    pub fn node_events(self, session: usize, count: usize) -> FaultScript {
        self.expect(Expect::NodeEvents { session, count })
    }

    /// `session` saw exactly these state changes at the last step.
    pub fn states(self, session: usize, states: &[KeeperState]) -> FaultScript {
        self.expect(Expect::States {
            session,
            states: states.to_vec(),
        })
    }

    fn break_link(mut self, step: Step) -> FaultScript {
        assert_eq!(
            self.standing,
            Standing::Up,
            "step {}: the proxied sessions must be up to break their link",
            self.steps.len()
        );
        self.standing = Standing::CutOff { expired: false };
        self.push(step)
    }

    fn push(mut self, step: Step) -> FaultScript {
        self.steps.push(step);
        self
    }

    fn expect(mut self, expect: Expect) -> FaultScript {
        let step = self
            .steps
            .len()
            .checked_sub(1)
            .expect("an expectation follows a step");
        self.expects.push((step, expect));
        self
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Apply { session, request } => write!(f, "s{session} {}", Brief(request)),
            Step::Cut => write!(f, "CUT the proxied connections"),
            Step::Partition => write!(f, "PARTITION the proxied sessions"),
            Step::RequestLost { session, request } => {
                write!(f, "s{session} {} -- REQUEST LOST, cut", Brief(request))
            }
            Step::ReplyLost { session, request } => {
                write!(
                    f,
                    "s{session} {} -- applied, REPLY LOST, cut",
                    Brief(request)
                )
            }
            Step::Expire => write!(f, "EXPIRE: the server expires the cut-off sessions"),
            Step::Heal => write!(f, "HEAL: reconnect or learn of expiry"),
        }
    }
}
