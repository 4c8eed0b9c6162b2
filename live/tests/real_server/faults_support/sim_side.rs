//! Runs a fault script on the simulator's own pieces: the in-memory server
//! (`ZkServer`) and one `ClientSession` (the Java-client session layer) per
//! session, each with a [`Probe`] recipe that reports what it is handed.
//!
//! The faults map onto the sim's API as its drivers use it:
//! - a dropped connection: `ClientSession::disconnected` (requests in
//!   flight fail with ConnectionLoss) and `ZkServer::disconnect` (the
//!   server forgets the session's watches);
//! - a lost reply: `ZkServer::apply`, then the dropped connection; the
//!   notifications the proxied sessions would have received are lost too;
//! - expiry: the clock passes the proxied timeout while the other sessions
//!   keep being heard from (they ping), then `expire_due_sessions`;
//! - healing: `ClientSession::reconnected` and `ZkServer::set_watches` with
//!   the watches and zxid it returns, or `ClientSession::expired`.

use super::observe::{canonical_events, Run, Tree};
use super::probe::{Probe, Seen};
use super::script::{FaultScript, Link, Step};
use crate::conformance_support::outcome::{Normalizer, StepOutcome};
use crate::conformance_support::script::{placeholder_path, rebase};
use std::collections::BTreeMap;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request, SessionId, WatchedEvent, ZkResult};
use zk_sim::client::{ClientSession, ConnectionState};
use zk_sim::server::{Notification, ServerConfig, SortedOrder, ZkServer};

/// Session timeout of the direct sessions (as on the live side).
const DIRECT_TIMEOUT_MS: u64 = 10_000;

pub fn run(script: &FaultScript, root: &Path) -> Run {
    let mut world = SimWorld::new(script);
    let create_root = Request::Create {
        path: root.clone(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    };
    world.apply(0, &create_root);
    let created = world.take_seen(0);
    assert!(
        matches!(created.as_slice(), [Seen::Reply(Ok(_))]),
        "sim: creating the root failed: {created:?}"
    );
    let ids = world.ids.clone();
    let normalizer = Normalizer {
        root,
        session_ids: &ids,
    };
    let mut outcomes = Vec::new();
    for step in &script.steps {
        world.step(step, root);
        outcomes.push(world.outcome(&normalizer));
    }
    Run {
        outcomes,
        tree: world.tree(&normalizer, root),
    }
}

/// Who receives what the server sends now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hearing {
    Everyone,
    /// A black hole swallows what goes to the proxied sessions.
    DirectOnly,
}

struct SimWorld {
    server: ZkServer,
    clients: Vec<ClientSession<Probe>>,
    ids: Vec<SessionId>,
    links: Vec<Link>,
    proxied_timeout_ms: u64,
}

impl SimWorld {
    fn new(script: &FaultScript) -> SimWorld {
        let mut world = SimWorld {
            server: ZkServer::new(ServerConfig::default()),
            clients: Vec::new(),
            ids: Vec::new(),
            links: script.links.clone(),
            proxied_timeout_ms: script.proxied_timeout_ms,
        };
        for (index, link) in script.links.iter().enumerate() {
            let id = SessionId(0x5157_0000 + index as i64);
            let timeout_ms = match link {
                Link::Direct => DIRECT_TIMEOUT_MS,
                Link::Proxied => script.proxied_timeout_ms,
            };
            world
                .server
                .open_session(id, timeout_ms)
                .expect("fresh session ids");
            let mut client = ClientSession::new(Probe);
            client.connected(id);
            client.outcomes.clear();
            world.clients.push(client);
            world.ids.push(id);
        }
        world
    }

    fn step(&mut self, step: &Step, root: &Path) {
        match step {
            Step::Apply { session, request } => self.apply(*session, &rebase(request, root)),
            Step::Cut | Step::Partition => self.drop_proxied_connections(),
            Step::RequestLost { session, request } => {
                self.send(*session, &rebase(request, root))
                    .expect("the script sends lost requests on live links");
                self.drop_proxied_connections();
            }
            Step::ReplyLost { session, request } => {
                let request = self
                    .send(*session, &rebase(request, root))
                    .expect("the script sends lost replies on live links");
                let applied = self
                    .server
                    .apply(self.ids[*session], &request, &mut SortedOrder);
                // The hole swallows everything on its way to proxied clients.
                self.route(applied.notifications, Hearing::DirectOnly);
                self.drop_proxied_connections();
            }
            Step::Expire => self.expire(),
            Step::Heal => self.heal(),
        }
    }

    /// The client takes `request` and, if connected, puts it on the wire.
    /// (On an expired handle the client answers SessionExpired at once.)
    fn send(&mut self, session: usize, request: &Request) -> Option<Request> {
        self.clients[session].call(request.clone());
        let (_, sent) = self.clients[session].next_to_send()?;
        Some(sent)
    }

    fn apply(&mut self, session: usize, request: &Request) {
        let Some(sent) = self.send(session, request) else {
            return;
        };
        let applied = self
            .server
            .apply(self.ids[session], &sent, &mut SortedOrder);
        // ZooKeeper sends the notifications a request triggers before its reply.
        self.route(applied.notifications, Hearing::Everyone);
        self.clients[session].reply(applied.result, applied.zxid);
    }

    /// Delivers notifications to the connected clients that hear the server.
    fn route(&mut self, notifications: Vec<Notification>, hearing: Hearing) {
        for notification in notifications {
            let index = self
                .ids
                .iter()
                .position(|id| *id == notification.session)
                .expect("notifications go to known sessions");
            let lost = hearing == Hearing::DirectOnly && self.links[index] == Link::Proxied;
            let client = &mut self.clients[index];
            if !lost && client.state == ConnectionState::Connected {
                client.notification(notification.event);
            }
        }
    }

    fn drop_proxied_connections(&mut self) {
        for index in self.proxied() {
            if self.clients[index].state == ConnectionState::Connected {
                self.clients[index].disconnected();
                self.server.disconnect(self.ids[index]);
            }
        }
    }

    /// The proxied timeout passes; connected sessions ping meanwhile.
    fn expire(&mut self) {
        let now_ms = self.server.now_ms() + self.proxied_timeout_ms as i64;
        self.server.set_time_ms(now_ms);
        for (index, client) in self.clients.iter().enumerate() {
            if client.state == ConnectionState::Connected {
                self.server.touch_session(self.ids[index]);
            }
        }
        let (expired, notifications) = self.server.expire_due_sessions(&mut SortedOrder);
        let cut_off: Vec<SessionId> = self
            .proxied()
            .into_iter()
            .filter(|i| self.clients[*i].state == ConnectionState::Disconnected)
            .map(|i| self.ids[i])
            .collect();
        assert_eq!(expired, cut_off, "sim: exactly the cut-off sessions expire");
        self.route(notifications, Hearing::Everyone);
    }

    fn heal(&mut self) {
        for index in self.proxied() {
            if self.clients[index].state != ConnectionState::Disconnected {
                continue;
            }
            let id = self.ids[index];
            if self.server.is_session_alive(id) {
                let (watches, last_zxid) = self.clients[index].reconnected();
                let notifications = self.server.set_watches(id, last_zxid, &watches);
                self.route(notifications, Hearing::Everyone);
            } else {
                self.clients[index].expired();
            }
        }
    }

    fn proxied(&self) -> Vec<usize> {
        (0..self.links.len())
            .filter(|i| self.links[*i] == Link::Proxied)
            .collect()
    }

    fn take_seen(&mut self, session: usize) -> Vec<Seen> {
        std::mem::take(&mut self.clients[session].outcomes)
    }

    /// The step's reply and every session's events since the last step.
    fn outcome(&mut self, normalizer: &Normalizer<'_>) -> StepOutcome {
        let mut result: Option<ZkResult> = None;
        let mut events = BTreeMap::new();
        for session in 0..self.clients.len() {
            let mut raw: Vec<WatchedEvent> = Vec::new();
            for seen in self.take_seen(session) {
                match seen {
                    Seen::Reply(reply) => {
                        assert!(result.is_none(), "sim: two replies in one step");
                        result = Some(reply);
                    }
                    Seen::Node(event) => raw.push(event),
                    Seen::State(state) => raw.push(WatchedEvent::state(state)),
                    Seen::WatchState(_) => {}
                }
            }
            if !raw.is_empty() {
                events.insert(session, canonical_events(normalizer, &raw));
            }
        }
        StepOutcome {
            result: result.map(|r| normalizer.result(&r)),
            events,
        }
    }

    fn tree(&self, normalizer: &Normalizer<'_>, root: &Path) -> Tree {
        self.server
            .paths()
            .into_iter()
            .filter(|path| placeholder_path(path.as_str(), root) != path.as_str())
            .map(|path| {
                let data = self.server.data(&path).expect("listed").to_vec();
                let stat = self.server.stat(&path).expect("listed");
                (
                    placeholder_path(path.as_str(), root),
                    (data, normalizer.stat(&stat)),
                )
            })
            .collect()
    }
}
