//! What a diagnosis needs to remember of a run, recorded always (not only
//! with the trace): who created each node and whether the creator learned
//! its name, who tried to delete it and what became of the attempt, when
//! each watch was set and on a node that existed or not, the last event
//! each recipe received and whether it acted on it, sessions the server
//! ended, pauses, and who held what when.
//!
//! The driver calls one method per thing that happened, with the
//! simulated time; everything is kept in ordered maps, so a diagnosis is
//! as deterministic as the run.

use crate::oracles::{ClientIndex, SimNanos};
use std::collections::BTreeMap;
use zk_recipes::zk::{
    EventType, MultiOp, OpResult, Path, Reply, Request, SessionId, WatchedEvent, ZkResult,
};
use zk_recipes::Observation;

/// The three kinds of watch a client can arm (ZKWatchManager's maps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WatchKind {
    /// Set by exists() on a node that exists, or by getData().
    Data,
    /// Set by exists() on a node that does not exist: fires on its creation.
    Exist,
    /// Set by getChildren().
    Child,
}

/// When a watch was set, and what the node looked like then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchRecord {
    pub set_ns: SimNanos,
    /// The request that set it (`exists`, `getData`, `getChildren`).
    pub by: &'static str,
    /// Children the node had when a child watch was set.
    pub children: Option<usize>,
}

/// What became of one delete a client sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeleteFate {
    /// Lost with the connection before the server applied it.
    LostBeforeApply,
    /// Applied; `reply_lost` when the client never heard.
    Applied { reply_lost: bool },
    /// The server refused it (the error's name).
    Refused(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteAttempt {
    pub client: ClientIndex,
    pub at_ns: SimNanos,
    pub fate: DeleteFate,
}

/// How a node came to be gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Removal {
    Deleted {
        by: ClientIndex,
    },
    /// Its ephemeral owner's session ended.
    SessionEnded {
        client: ClientIndex,
    },
    /// Reaped by the server (an empty container, an expired TTL node).
    Reaped,
}

/// One node a client created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRecord {
    pub creator: ClientIndex,
    pub created_ns: SimNanos,
    /// The ephemeral owner, if the node is ephemeral.
    pub owner: Option<SessionId>,
    pub persistent: bool,
    /// The creator received the reply (learned the node's name).
    pub reply_delivered: bool,
    /// When the reply was lost, if it was.
    pub reply_lost_ns: Option<SimNanos>,
    /// When its creator, after the reply was lost and before it created
    /// any other node under the same parent, got a listing of the parent
    /// that held the node: it could recover the node by reading.
    pub recovered_ns: Option<SimNanos>,
    pub deletes: Vec<DeleteAttempt>,
    /// When and how it went (None while it exists).
    pub removed: Option<(SimNanos, Removal)>,
}

impl NodeRecord {
    /// Its creator learned its name: from its create's reply, or from a
    /// listing it got after that reply was lost and before it created
    /// another node beside it (see `recovered_ns`).
    pub fn name_known(&self) -> bool {
        self.reply_delivered || self.recovered_ns.is_some()
    }
}

/// A children listing the server gave a client: of which node, when, and
/// the names it held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub dir: Path,
    pub at_ns: SimNanos,
    pub children: Vec<String>,
    /// Its reply was lost: the recipe never saw it.
    pub reply_lost: bool,
}

impl Listing {
    /// The listing holds the node `path` (a child of its directory).
    pub fn has(&self, path: &Path) -> bool {
        path.parent().as_ref() == Some(&self.dir) && self.children.iter().any(|c| c == path.name())
    }
}

/// One acquisition as the application saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    pub client: ClientIndex,
    pub from_ns: SimNanos,
    pub until_ns: Option<SimNanos>,
    pub token: i64,
    /// `released`, `lost` (None: still held).
    pub ended: Option<&'static str>,
    /// The server ended the holder's session while it held.
    pub session_ended_ns: Option<SimNanos>,
    /// A shared hold (a read lock), which other shared holds may join.
    pub shared: bool,
    /// The last listing of its node's directory whose reply reached the
    /// client before it acquired: what its decision could rest on.
    pub decided_on: Option<Listing>,
}

/// One client's side of the history.
#[derive(Clone, Debug, Default)]
pub struct ClientHistory {
    /// The watches the client armed, by kind and path (a watch that fired
    /// or went with its session is removed).
    pub watches: BTreeMap<(WatchKind, Path), WatchRecord>,
    /// The last node event the recipe received: time, event, and whether
    /// the recipe sent anything since.
    pub last_event: Option<(SimNanos, WatchedEvent, bool)>,
    /// Times the server ended this client's session.
    pub sessions_ended: Vec<SimNanos>,
    /// Pauses: (start, length in ms).
    pub pauses: Vec<(SimNanos, u64)>,
    /// Times the client heard its connection drop (its session layer
    /// turned Disconnected and told the recipe).
    pub disconnects_heard: Vec<SimNanos>,
    /// The last outcome the recipe gave the application.
    pub last_outcome: Option<(SimNanos, Observation)>,
    /// Creates the server refused with NodeExists: (time, path).
    pub creates_collided: Vec<(SimNanos, Path)>,
    /// When the recipe last sent a request.
    pub last_send_ns: SimNanos,
    /// The last request lost to a connection loss (before or after the
    /// server applied it): when, and the request.
    pub last_loss: Option<(SimNanos, String)>,
    /// The last children listing of each directory the server gave it.
    pub listings: BTreeMap<Path, Listing>,
    /// Every outcome the recipe gave the application: when, and whether it
    /// gave up the call (a timed acquire that timed out, a failed call).
    pub outcomes: Vec<(SimNanos, Ended)>,
    /// The request applied last and whether its reply came back
    /// (`reply_lost` marks it).
    last_applied: Option<Request>,
}

/// How a call of the application ended, as far as an attempt's nodes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The recipe gave up the call: a timeout, a failure.
    GaveUp(&'static str),
    /// Any other outcome (acquired, released, an item, ...).
    Answered,
}

/// The run's history (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct History {
    pub clients: Vec<ClientHistory>,
    pub nodes: BTreeMap<Path, NodeRecord>,
    pub holds: Vec<Hold>,
}

impl History {
    pub fn new(clients: usize) -> History {
        History {
            clients: vec![ClientHistory::default(); clients],
            ..History::default()
        }
    }

    /// The server applied `request` from `client` with `result`.
    pub fn applied(
        &mut self,
        client: ClientIndex,
        at_ns: SimNanos,
        session: SessionId,
        request: &Request,
        result: &ZkResult,
    ) {
        self.clients[client].last_applied = Some(request.clone());
        match (request, result) {
            (Request::Create { path, .. }, Err(zk_recipes::zk::ZkError::NodeExists)) => {
                self.clients[client]
                    .creates_collided
                    .push((at_ns, path.clone()));
            }
            (Request::Create { mode, .. }, Ok(Reply::Created { path, .. })) => {
                self.created(client, at_ns, session, path, mode.is_ephemeral());
            }
            (Request::Delete { path, .. }, result) => {
                let fate = match result {
                    Ok(_) => DeleteFate::Applied { reply_lost: false },
                    Err(error) => DeleteFate::Refused(format!("{error:?}")),
                };
                self.delete_attempt(client, at_ns, path, fate, result.is_ok());
            }
            (Request::Multi(ops), Ok(Reply::Multi(results))) => {
                for (op, result) in ops.iter().zip(results) {
                    match (op, result) {
                        (MultiOp::Create { mode, .. }, OpResult::Created { path, .. }) => {
                            self.created(client, at_ns, session, path, mode.is_ephemeral());
                        }
                        (MultiOp::Delete { path, .. }, _) => {
                            let fate = DeleteFate::Applied { reply_lost: false };
                            self.delete_attempt(client, at_ns, path, fate, true);
                        }
                        _ => {}
                    }
                }
            }
            _ => {
                self.listed(client, at_ns, request, result);
                self.watch_set(client, at_ns, request, result);
            }
        }
    }

    /// A getChildren the server answered: the client's last listing of
    /// that directory.
    fn listed(
        &mut self,
        client: ClientIndex,
        at_ns: SimNanos,
        request: &Request,
        result: &ZkResult,
    ) {
        let (dir, children) = match (request, result) {
            (Request::GetChildren { path, .. }, Ok(Reply::Children(children)))
            | (Request::GetChildren2 { path, .. }, Ok(Reply::Children2 { children, .. })) => {
                (path, children)
            }
            _ => return,
        };
        let listing = Listing {
            dir: dir.clone(),
            at_ns,
            children: children.clone(),
            reply_lost: false,
        };
        self.recovery_read(client, at_ns, &listing);
        self.clients[client].listings.insert(dir.clone(), listing);
    }

    /// Marks the nodes `listing` lets `client` recover: its own, whose
    /// create's reply was lost, with no later node of its under `dir`.
    fn recovery_read(&mut self, client: ClientIndex, at_ns: SimNanos, listing: &Listing) {
        let newest = |nodes: &BTreeMap<Path, NodeRecord>| {
            nodes
                .iter()
                .filter(|(path, node)| {
                    node.creator == client && path.parent().as_ref() == Some(&listing.dir)
                })
                .map(|(_, node)| node.created_ns)
                .max()
        };
        let newest_ns = newest(&self.nodes);
        for (path, node) in self.nodes.iter_mut() {
            let recoverable = node.creator == client
                && !node.reply_delivered
                && node.reply_lost_ns.is_some()
                && node.recovered_ns.is_none()
                && Some(node.created_ns) == newest_ns;
            if recoverable && listing.has(path) {
                node.recovered_ns = Some(at_ns);
            }
        }
    }

    fn created(
        &mut self,
        client: ClientIndex,
        at_ns: SimNanos,
        session: SessionId,
        path: &Path,
        ephemeral: bool,
    ) {
        self.nodes.insert(
            path.clone(),
            NodeRecord {
                creator: client,
                created_ns: at_ns,
                owner: ephemeral.then_some(session),
                persistent: !ephemeral,
                reply_delivered: false,
                reply_lost_ns: None,
                recovered_ns: None,
                deletes: Vec::new(),
                removed: None,
            },
        );
    }

    fn delete_attempt(
        &mut self,
        client: ClientIndex,
        at_ns: SimNanos,
        path: &Path,
        fate: DeleteFate,
        removed: bool,
    ) {
        if let Some(node) = self.nodes.get_mut(path) {
            node.deletes.push(DeleteAttempt {
                client,
                at_ns,
                fate,
            });
            if removed && node.removed.is_none() {
                node.removed = Some((at_ns, Removal::Deleted { by: client }));
            }
        }
    }

    fn watch_set(
        &mut self,
        client: ClientIndex,
        at_ns: SimNanos,
        request: &Request,
        result: &ZkResult,
    ) {
        let (kind, path, by, children) = match (request, result) {
            (Request::Exists { path, watch: true }, Ok(Reply::Exists(Some(_)))) => {
                (WatchKind::Data, path, "exists", None)
            }
            (Request::Exists { path, watch: true }, Ok(Reply::Exists(None))) => {
                (WatchKind::Exist, path, "exists", None)
            }
            (Request::GetData { path, watch: true }, Ok(_)) => {
                (WatchKind::Data, path, "getData", None)
            }
            (Request::GetChildren { path, watch: true }, Ok(Reply::Children(children)))
            | (
                Request::GetChildren2 { path, watch: true },
                Ok(Reply::Children2 { children, .. }),
            ) => (WatchKind::Child, path, "getChildren", Some(children.len())),
            _ => return,
        };
        self.clients[client].watches.insert(
            (kind, path.clone()),
            WatchRecord {
                set_ns: at_ns,
                by,
                children,
            },
        );
    }

    /// A request from `client` was lost before the server applied it.
    pub fn lost_before_apply(&mut self, client: ClientIndex, at_ns: SimNanos, request: &Request) {
        self.clients[client].last_loss = Some((at_ns, describe(request)));
        if let Request::Delete { path, .. } = request {
            self.delete_attempt(client, at_ns, path, DeleteFate::LostBeforeApply, false);
        }
    }

    /// The reply to the request `client` had applied last was lost.
    pub fn reply_lost(&mut self, client: ClientIndex, at_ns: SimNanos) {
        let Some(request) = self.clients[client].last_applied.clone() else {
            return;
        };
        self.clients[client].last_loss = Some((at_ns, describe(&request)));
        match request {
            Request::Delete { path, .. } => {
                if let Some(attempt) = self
                    .nodes
                    .get_mut(&path)
                    .and_then(|node| node.deletes.last_mut())
                {
                    if let DeleteFate::Applied { reply_lost } = &mut attempt.fate {
                        *reply_lost = true;
                    }
                }
            }
            Request::GetChildren { path, .. } | Request::GetChildren2 { path, .. } => {
                if let Some(listing) = self.clients[client].listings.get_mut(&path) {
                    listing.reply_lost = true;
                    // The client never saw it: it recovered nothing by it.
                    let lost_ns = Some(listing.at_ns);
                    for node in self.nodes.values_mut() {
                        if node.creator == client && node.recovered_ns == lost_ns {
                            node.recovered_ns = None;
                        }
                    }
                }
            }
            Request::Create { .. } | Request::Multi(_) => {
                for node in self.nodes.values_mut() {
                    if node.creator == client
                        && !node.reply_delivered
                        && node.reply_lost_ns.is_none()
                    {
                        node.reply_lost_ns = Some(at_ns);
                    }
                }
            }
            _ => {}
        }
    }

    /// A reply reached `client`'s session layer.
    pub fn reply_delivered(&mut self, result: &ZkResult) {
        let paths: Vec<&Path> = match result {
            Ok(Reply::Created { path, .. }) => vec![path],
            Ok(Reply::Multi(results)) => results
                .iter()
                .filter_map(|r| match r {
                    OpResult::Created { path, .. } => Some(path),
                    _ => None,
                })
                .collect(),
            _ => return,
        };
        for path in paths {
            if let Some(node) = self.nodes.get_mut(path) {
                node.reply_delivered = true;
            }
        }
    }

    /// A node event reached `client`'s recipe (`fired`: a watch was armed
    /// for it, which it used up).
    pub fn event_delivered(
        &mut self,
        client: ClientIndex,
        at_ns: SimNanos,
        event: &WatchedEvent,
        fired: bool,
    ) {
        let history = &mut self.clients[client];
        if fired {
            if let Some(path) = &event.path {
                let kinds: &[WatchKind] = match event.event_type {
                    EventType::NodeChildrenChanged => &[WatchKind::Child],
                    EventType::NodeDeleted => {
                        &[WatchKind::Data, WatchKind::Exist, WatchKind::Child]
                    }
                    _ => &[WatchKind::Data, WatchKind::Exist],
                };
                for kind in kinds {
                    history.watches.remove(&(*kind, path.clone()));
                }
            }
        }
        history.last_event = Some((at_ns, event.clone(), false));
    }

    /// `client`'s recipe sent a request.
    pub fn sent(&mut self, client: ClientIndex, at_ns: SimNanos) {
        self.clients[client].last_send_ns = at_ns;
        if let Some((_, _, acted)) = &mut self.clients[client].last_event {
            *acted = true;
        }
    }

    /// The recipe gave the application an outcome.
    pub fn outcome(&mut self, client: ClientIndex, at_ns: SimNanos, observation: &Observation) {
        match observation {
            Observation::Acquired { token, hold } => {
                let decided_on = self.decided_on(client, at_ns);
                self.holds.push(Hold {
                    client,
                    from_ns: at_ns,
                    until_ns: None,
                    token: token.0,
                    ended: None,
                    session_ended_ns: None,
                    shared: *hold == zk_recipes::Hold::Shared,
                    decided_on,
                });
            }
            Observation::Released | Observation::Lost => {
                let ended = if *observation == Observation::Released {
                    "released"
                } else {
                    "lost"
                };
                for hold in self.holds_of(client) {
                    hold.until_ns = Some(at_ns);
                    hold.ended = Some(ended);
                }
            }
            _ => {}
        }
        let ended = match observation {
            Observation::TimedOut => Ended::GaveUp("timed out"),
            Observation::Failed { .. } => Ended::GaveUp("failed"),
            _ => Ended::Answered,
        };
        self.clients[client].outcomes.push((at_ns, ended));
        self.clients[client].last_outcome = Some((at_ns, observation.clone()));
    }

    /// The listing of `client`'s contender node's directory it last saw
    /// (its reply delivered) at `at_ns`.
    fn decided_on(&self, client: ClientIndex, at_ns: SimNanos) -> Option<Listing> {
        let (node, _) = self.node_of(client, at_ns)?;
        let listing = self.clients[client].listings.get(&node.parent()?)?;
        (!listing.reply_lost).then(|| listing.clone())
    }

    /// How the call during which `client` created a node at `created_ns`
    /// ended: the first outcome after it, if one came before `before_ns`.
    pub fn attempt_end(
        &self,
        client: ClientIndex,
        created_ns: SimNanos,
        before_ns: SimNanos,
    ) -> Option<(SimNanos, Ended)> {
        self.clients[client]
            .outcomes
            .iter()
            .find(|(at, _)| *at >= created_ns)
            .filter(|(at, _)| *at < before_ns)
            .copied()
    }

    fn holds_of(&mut self, client: ClientIndex) -> impl Iterator<Item = &mut Hold> {
        self.holds
            .iter_mut()
            .filter(move |h| h.client == client && h.ended.is_none())
    }

    /// The server ended `client`'s session `session` (expiry): its
    /// ephemeral nodes are gone and, if it was the client's `current`
    /// session, its watches.
    pub fn session_ended(
        &mut self,
        client: ClientIndex,
        at_ns: SimNanos,
        session: SessionId,
        current: bool,
    ) {
        if current {
            self.clients[client].sessions_ended.push(at_ns);
            self.clients[client].watches.clear();
        }
        for node in self.nodes.values_mut() {
            if node.owner == Some(session) && node.removed.is_none() {
                node.removed = Some((at_ns, Removal::SessionEnded { client }));
            }
        }
        if current {
            for hold in self.holds_of(client) {
                hold.session_ended_ns.get_or_insert(at_ns);
            }
        }
    }

    /// `client` heard its connection drop (Disconnected).
    pub fn disconnected(&mut self, client: ClientIndex, at_ns: SimNanos) {
        self.clients[client].disconnects_heard.push(at_ns);
    }

    /// `client` was paused for `pause_ms`.
    pub fn paused(&mut self, client: ClientIndex, at_ns: SimNanos, pause_ms: u64) {
        self.clients[client].pauses.push((at_ns, pause_ms));
    }

    /// Nodes the server reaped (`exists` says whether a path still does).
    pub fn reaped(&mut self, at_ns: SimNanos, exists: impl Fn(&Path) -> bool) {
        for (path, node) in &mut self.nodes {
            if node.removed.is_none() && !exists(path) {
                node.removed = Some((at_ns, Removal::Reaped));
            }
        }
    }

    /// The holders at `at_ns` (every client that believed it held).
    pub fn holders_at(&self, at_ns: SimNanos) -> Vec<&Hold> {
        self.holds
            .iter()
            .filter(|h| h.from_ns <= at_ns && h.until_ns.is_none_or(|until| until > at_ns))
            .collect()
    }

    /// The node `client` created last at or before `at_ns` under `parent`
    /// (its contender node, for a lock or an election).
    pub fn node_of(&self, client: ClientIndex, at_ns: SimNanos) -> Option<(&Path, &NodeRecord)> {
        self.nodes
            .iter()
            .filter(|(_, node)| {
                node.creator == client && node.created_ns <= at_ns && !node.persistent
            })
            .max_by_key(|(_, node)| node.created_ns)
    }
}

/// A request in a few words: `getChildren(/leader, watch)`.
pub fn describe(request: &Request) -> String {
    let watch = |watch: &bool| if *watch { ", watch" } else { "" };
    match request {
        Request::Create { path, mode, .. } => format!("create({path}, {mode:?})"),
        Request::Delete { path, .. } => format!("delete({path})"),
        Request::Exists { path, watch: w } => format!("exists({path}{})", watch(w)),
        Request::GetData { path, watch: w } => format!("getData({path}{})", watch(w)),
        Request::SetData { path, .. } => format!("setData({path})"),
        Request::GetChildren { path, watch: w } | Request::GetChildren2 { path, watch: w } => {
            format!("getChildren({path}{})", watch(w))
        }
        Request::Check { path, .. } => format!("check({path})"),
        Request::Multi(ops) => format!("multi({} ops)", ops.len()),
        other => format!("{other:?}"),
    }
}
