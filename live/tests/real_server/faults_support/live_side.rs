//! Runs a fault script on the real server: direct sessions connect to it,
//! proxied ones through a [`FaultProxy`], whose faults realize the steps.
//!
//! Timing, from `zookeeper-client` 0.9 (session/mod.rs) and the server's
//! SessionTrackerImpl, with T the proxied session timeout:
//! - the client notices a silent connection after 8 ticks = 0.4 T (tick =
//!   T/20 here) and pings after 3 idle ticks; after a cut it notices at once;
//! - reconnecting, it re-registers its watches with the zxid of the last
//!   reply it received (SetWatches), and backs off 100 ms, 200 ms, ...;
//! - the server expires a session at most T + tickTime (200 ms) after it
//!   last heard from it; the client, unable to reconnect, declares itself
//!   expired 1.4 T after it last heard from the server.
//!
//! So `Expire` waits until the server (the `dump` four-letter command) no
//! longer lists the cut-off sessions, neither in its session tracker nor
//! among its data tree's ephemerals: the server drops a session from its
//! tracker just before it deletes the session's ephemerals and fires their
//! watches (once, the tracker alone let the step end in between, and a
//! notification came a step late), so the round trip that ends the step
//! (below) is answered after the expiry and brings its notifications. It polls with a deadline of T + [`EXPIRY_DEADLINE_SLACK`]
//! from the moment the link broke, rather than sleeping T plus a guess of
//! the server's tick (a guess that failed once with tickTime=500: the
//! notifications came a step late). `Heal` follows before the client's own
//! 1.4 T deadline: the client last heard from the server at most 4 ticks
//! before the break, so T = 6 s leaves ~0.8 s plus what the server's
//! expiry rounding does not take (at most a server tick).
//!
//! Each step's events: what the waits drained, then (for sessions whose
//! link is up) a round trip that brings every notification sent before it.

use super::observe::{canonical_events, Run, Tree};
use super::script::{FaultScript, Link, Step};
use crate::conformance_support::outcome::{NormEvent, Normalizer, StepOutcome};
use crate::conformance_support::script::{placeholder_path, rebase};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;
use zk_live::admin;
use zk_live::proxy::{FaultProxy, Hole};
use zk_live::LiveSession;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, KeeperState, Path, Reply, Request, SessionId, WatchedEvent, ZkResult,
};

/// Session timeout of the direct sessions.
const DIRECT_TIMEOUT_MS: u64 = 10_000;
/// How long past T `Expire` waits at most for the server to expire the
/// cut-off sessions (it takes at most a server tick; this is the bound
/// after which the test fails).
const EXPIRY_DEADLINE_SLACK: Duration = Duration::from_secs(10);
/// How long a cut takes to reach the client.
const CUT_NOTICE: Duration = Duration::from_secs(5);
/// How long the proxy may take to swallow the awaited request or reply.
const SWALLOW_WAIT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(10);

pub async fn run(script: &FaultScript, root: &Path, addr: &str) -> Run {
    let proxy = FaultProxy::start(addr)
        .await
        .unwrap_or_else(|error| panic!("live: {error}"));
    let mut world = LiveWorld::connect(script, addr, &proxy).await;
    let create_root = Request::Create {
        path: root.clone(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    };
    let created = world.sessions[0].apply(&create_root).await;
    assert!(
        created.is_ok(),
        "live: creating the root {root} failed: {created:?}"
    );
    let ids: Vec<SessionId> = world.sessions.iter().map(LiveSession::session_id).collect();
    let normalizer = Normalizer {
        root,
        session_ids: &ids,
    };
    let mut outcomes = Vec::new();
    for step in &script.steps {
        let result = world.step(step, root).await;
        let events = world.collect_events(&normalizer).await;
        outcomes.push(StepOutcome {
            result: result.map(|r| normalizer.result(&r)),
            events,
        });
    }
    let tree = read_tree(&mut world.sessions[0], root, &normalizer).await;
    world.close().await;
    Run { outcomes, tree }
}

/// Where a session's link stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    Up,
    CutOff,
    Expired,
}

struct LiveWorld<'p> {
    proxy: &'p FaultProxy,
    /// The server's address, for its four-letter commands.
    addr: String,
    sessions: Vec<LiveSession>,
    links: Vec<Link>,
    standing: Vec<Standing>,
    /// Events drained while waiting, reported with the step's others.
    pending: Vec<Vec<WatchedEvent>>,
    /// When the proxied sessions' link broke (the server's last chance to
    /// hear from them).
    cut_off_since: Option<Instant>,
    proxied_timeout_ms: u64,
}

impl<'p> LiveWorld<'p> {
    async fn connect(script: &FaultScript, addr: &str, proxy: &'p FaultProxy) -> LiveWorld<'p> {
        let proxy_addr = proxy.addr().to_string();
        let mut sessions = Vec::new();
        for link in &script.links {
            let (at, timeout_ms) = match link {
                Link::Direct => (addr, DIRECT_TIMEOUT_MS),
                Link::Proxied => (proxy_addr.as_str(), script.proxied_timeout_ms),
            };
            let session = LiveSession::connect(at, timeout_ms)
                .await
                .unwrap_or_else(|error| panic!("live: {error}"));
            assert_eq!(
                session.session_timeout_ms(),
                timeout_ms,
                "live: the server granted another session timeout"
            );
            sessions.push(session);
        }
        LiveWorld {
            proxy,
            addr: addr.to_string(),
            standing: vec![Standing::Up; sessions.len()],
            pending: vec![Vec::new(); sessions.len()],
            sessions,
            links: script.links.clone(),
            cut_off_since: None,
            proxied_timeout_ms: script.proxied_timeout_ms,
        }
    }

    /// Runs one step; the reply if it sent a request.
    async fn step(&mut self, step: &Step, root: &Path) -> Option<ZkResult> {
        match step {
            Step::Apply { session, request } => {
                Some(self.sessions[*session].apply(&rebase(request, root)).await)
            }
            Step::Cut => {
                self.open_full_hole();
                self.proxy.cut_all();
                self.await_proxied_disconnect(CUT_NOTICE).await;
                None
            }
            Step::Partition => {
                self.open_full_hole();
                let notice = Duration::from_millis(self.proxied_timeout_ms) + CUT_NOTICE;
                self.await_proxied_disconnect(notice).await;
                None
            }
            Step::RequestLost { session, request } => {
                Some(self.request_lost(*session, &rebase(request, root)).await)
            }
            Step::ReplyLost { session, request } => {
                Some(self.reply_lost(*session, &rebase(request, root)).await)
            }
            Step::Expire => {
                self.await_server_expiry().await;
                None
            }
            Step::Heal => {
                self.heal().await;
                None
            }
        }
    }

    /// Polls the server until no cut-off session is left in its session
    /// tracker or among its ephemerals (see the module doc).
    async fn await_server_expiry(&mut self) {
        let since = self
            .cut_off_since
            .expect("the script expires cut-off sessions");
        let cut_off: Vec<i64> = (0..self.sessions.len())
            .filter(|&index| self.standing[index] == Standing::CutOff)
            .map(|index| self.sessions[index].session_id().0)
            .collect();
        let deadline =
            since + Duration::from_millis(self.proxied_timeout_ms) + EXPIRY_DEADLINE_SLACK;
        loop {
            let mut left = Vec::new();
            for &id in &cut_off {
                let gone = admin::session_gone(&self.addr, id).unwrap_or_else(|error| {
                    panic!(
                        "live: cannot read the session tracker of {} with `dump` \
                         (scripts/zk-server whitelists it): {error}",
                        self.addr
                    )
                });
                if !gone {
                    left.push(format!("0x{id:x}"));
                }
            }
            if left.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "live: the server still holds the cut-off sessions {left:?} {:?} after the \
                 link broke (session timeout {} ms)",
                since.elapsed(),
                self.proxied_timeout_ms
            );
            tokio::time::sleep(POLL).await;
        }
    }

    fn open_full_hole(&mut self) {
        self.proxy.black_hole(Hole::Both);
        self.cut_off_since = Some(Instant::now());
    }

    /// The request vanishes in a full hole; then the connections are cut.
    async fn request_lost(&mut self, session: usize, request: &Request) -> ZkResult {
        let proxy = self.proxy;
        let before = proxy.swallowed();
        self.open_full_hole();
        let cut_once_swallowed = async {
            let swallowed = proxy
                .wait_swallowed(|s| s.requests > before.requests, SWALLOW_WAIT)
                .await;
            proxy.cut_all();
            swallowed
        };
        let (result, swallowed) =
            tokio::join!(self.sessions[session].apply(request), cut_once_swallowed);
        swallowed.unwrap_or_else(|error| panic!("live: the request was not lost: {error}"));
        self.await_proxied_disconnect(CUT_NOTICE).await;
        result
    }

    /// The request reaches the server; its reply vanishes in a hole towards
    /// the clients; then the connections are cut.
    async fn reply_lost(&mut self, session: usize, request: &Request) -> ZkResult {
        let proxy = self.proxy;
        let before = proxy.swallowed();
        proxy.black_hole(Hole::ToClient);
        let cut_once_swallowed = async {
            let swallowed = proxy
                .wait_swallowed(|s| s.replies > before.replies, SWALLOW_WAIT)
                .await;
            proxy.black_hole(Hole::Both);
            let since = Instant::now();
            proxy.cut_all();
            swallowed.map(|_| since)
        };
        let (result, swallowed) =
            tokio::join!(self.sessions[session].apply(request), cut_once_swallowed);
        let since =
            swallowed.unwrap_or_else(|error| panic!("live: the reply was not lost: {error}"));
        self.cut_off_since = Some(since);
        self.await_proxied_disconnect(CUT_NOTICE).await;
        result
    }

    async fn heal(&mut self) {
        self.proxy.heal();
        self.cut_off_since = None;
        let reconnect = Duration::from_millis(self.proxied_timeout_ms * 7 / 5) + CUT_NOTICE;
        for index in 0..self.sessions.len() {
            if self.standing[index] != Standing::CutOff {
                continue;
            }
            let accepted = [KeeperState::SyncConnected, KeeperState::Expired];
            self.standing[index] = match self.await_state(index, &accepted, reconnect).await {
                KeeperState::Expired => Standing::Expired,
                _ => Standing::Up,
            };
        }
    }

    async fn await_proxied_disconnect(&mut self, within: Duration) {
        for index in 0..self.sessions.len() {
            if self.links[index] == Link::Proxied && self.standing[index] == Standing::Up {
                self.await_state(index, &[KeeperState::Disconnected], within)
                    .await;
                self.standing[index] = Standing::CutOff;
            }
        }
    }

    /// Drains the session's events until it reports one of `states`.
    async fn await_state(
        &mut self,
        index: usize,
        states: &[KeeperState],
        within: Duration,
    ) -> KeeperState {
        let deadline = Instant::now() + within;
        loop {
            let drained = self.sessions[index].drain_events();
            let reached = drained
                .iter()
                .find(|e| e.event_type == EventType::None && states.contains(&e.state))
                .map(|e| e.state);
            self.pending[index].extend(drained);
            if let Some(state) = reached {
                return state;
            }
            assert!(
                Instant::now() < deadline,
                "live: session {index} did not report any of {states:?} within {within:?} \
                 (its events so far: {:?})",
                self.pending[index]
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Every session's events since the last step, canonical.
    async fn collect_events(
        &mut self,
        normalizer: &Normalizer<'_>,
    ) -> BTreeMap<usize, Vec<NormEvent>> {
        let mut events = BTreeMap::new();
        for index in 0..self.sessions.len() {
            let mut raw = std::mem::take(&mut self.pending[index]);
            match self.standing[index] {
                Standing::Up => raw.extend(self.sessions[index].collect_events().await),
                Standing::CutOff | Standing::Expired => {
                    raw.extend(self.sessions[index].drain_events())
                }
            }
            if !raw.is_empty() {
                events.insert(index, canonical_events(normalizer, &raw));
            }
        }
        events
    }

    async fn close(mut self) {
        self.proxy.heal();
        for session in &mut self.sessions {
            session
                .close()
                .await
                .unwrap_or_else(|error| panic!("live: {error}"));
        }
    }
}

/// The tree under `root`, read by a direct session.
async fn read_tree(session: &mut LiveSession, root: &Path, normalizer: &Normalizer<'_>) -> Tree {
    let mut tree = Tree::new();
    let mut unread = vec![root.clone()];
    while let Some(path) = unread.pop() {
        let read = session
            .apply(&Request::GetData {
                path: path.clone(),
                watch: false,
            })
            .await;
        let Ok(Reply::Data { data, stat }) = read else {
            panic!("live: reading {path} after the script: {read:?}");
        };
        tree.insert(
            placeholder_path(path.as_str(), root),
            (data, normalizer.stat(&stat)),
        );
        let listed = session
            .apply(&Request::GetChildren {
                path: path.clone(),
                watch: false,
            })
            .await;
        let Ok(Reply::Children(children)) = listed else {
            panic!("live: listing {path} after the script: {listed:?}");
        };
        for child in children {
            unread.push(Path::new(format!("{path}/{child}")).expect("a child of a valid path"));
        }
    }
    tree
}
