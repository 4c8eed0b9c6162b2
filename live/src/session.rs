//! One ZooKeeper session on a real server, speaking the vocabulary of
//! `zk_recipes::zk`: requests in, [`ZkResult`]s and [`WatchedEvent`]s out.
//!
//! Requests are applied one at a time (`&mut self`), so replies come back in
//! request order. Watches behave like the Java client's default watcher:
//! every `watch: true` request that the server accepts arms a one-shot watch,
//! and each notification is reported once, however many watches it fires.
//! A standalone `Check` is sent as a one-op multi (ZooKeeper 3.8's Java
//! client has no standalone check either); its error is the op's error.
//!
//! A session opened with [`LiveSession::connect_detached`] can be
//! abandoned ([`LiveSession::abandon`]: the handle goes, the session stays
//! on the server until its own timeout, as a Curator client's giving up on
//! its own clock leaves it); closing it ends it on the server as any other.

use crate::convert::{create_options, error_from_client, stat_from_client};
use crate::watches::WatchTable;
use crate::LiveError;
use std::time::Duration;
use zk_recipes::zk::{
    Acls, KeeperState, MultiOp, OpResult, Path, ReadOp, ReadResult, Reply, Request, SessionId,
    WatchedEvent, ZkError, ZkResult,
};
use zookeeper_client as zkc;

/// A session on a real ZooKeeper server.
pub struct LiveSession {
    /// `None` once closed.
    client: Option<zkc::Client>,
    /// Where the session was opened (a detached session's close joins it there).
    addr: String,
    /// Dropping the client does not close the session on the server.
    detached: bool,
    session_id: SessionId,
    session_timeout_ms: u64,
    state_watcher: zkc::StateWatcher,
    /// The last connection state reported as an event.
    reported_state: zkc::SessionState,
    watches: WatchTable,
    /// Events swept but not yet drained.
    events: Vec<WatchedEvent>,
}

/// A watch the server armed with a reply: the path and its receiver.
type ArmedWatch = (Path, zkc::OneshotWatcher);

impl LiveSession {
    /// Opens a session at `addr` (`host:port`, or a ZooKeeper connect string).
    /// Fails at once if no server answers, instead of retrying for ever.
    pub async fn connect(addr: &str, session_timeout_ms: u64) -> Result<LiveSession, LiveError> {
        LiveSession::connect_to(addr, session_timeout_ms, None).await
    }

    /// Opens a session, or with `session` a second connection into an
    /// existing one (its id and password: closing it ends that session).
    pub async fn connect_to(
        addr: &str,
        session_timeout_ms: u64,
        session: Option<zkc::SessionInfo>,
    ) -> Result<LiveSession, LiveError> {
        LiveSession::open(addr, session_timeout_ms, session, false).await
    }

    /// Opens a session that [`LiveSession::abandon`] can leave on the
    /// server (the client library's detached session: dropping the handle
    /// sends no CloseSession). [`LiveSession::close`] still ends it.
    pub async fn connect_detached(
        addr: &str,
        session_timeout_ms: u64,
    ) -> Result<LiveSession, LiveError> {
        LiveSession::open(addr, session_timeout_ms, None, true).await
    }

    async fn open(
        addr: &str,
        session_timeout_ms: u64,
        session: Option<zkc::SessionInfo>,
        detached: bool,
    ) -> Result<LiveSession, LiveError> {
        let mut connector = zkc::Client::connector();
        if let Some(session) = session {
            connector = connector.with_session(session);
        }
        if detached {
            connector = connector.with_detached();
        }
        let client = connector
            .with_session_timeout(Duration::from_millis(session_timeout_ms))
            .with_connection_timeout(Duration::from_millis(session_timeout_ms.max(1_000)))
            .with_fail_eagerly()
            .connect(addr)
            .await
            .map_err(|source| LiveError::Connect {
                addr: addr.to_string(),
                source,
            })?;
        let mut state_watcher = client.state_watcher();
        let reported_state = state_watcher.state();
        Ok(LiveSession {
            session_id: SessionId(client.session_id().0),
            session_timeout_ms: client.session_timeout().as_millis() as u64,
            client: Some(client),
            addr: addr.to_string(),
            detached,
            state_watcher,
            reported_state,
            watches: WatchTable::default(),
            events: Vec::new(),
        })
    }

    /// The id the server gave this session.
    pub fn session_id(&self) -> SessionId {
        self.session_id
    }

    /// The session timeout the server granted.
    pub fn session_timeout_ms(&self) -> u64 {
        self.session_timeout_ms
    }

    pub fn is_closed(&self) -> bool {
        self.client.is_none()
    }

    /// Sends one request and waits for its reply. After [`LiveSession::close`]
    /// (or expiry) every request fails with `SessionExpired`.
    pub async fn apply(&mut self, request: &Request) -> ZkResult {
        let Some(client) = &self.client else {
            return Err(ZkError::SessionExpired);
        };
        let (result, armed) = execute(client, request).await;
        // Sweep before arming: the new receiver must not share a sweep with
        // receivers fired before it was armed (see `watches`).
        self.sweep();
        if let Some((path, watcher)) = armed {
            self.watches.arm(path, watcher);
        }
        result
    }

    /// [`LiveSession::apply`], also returning the events that arrived before
    /// the reply (drained): a session layer must see them before the reply,
    /// and a watch the reply armed only after it.
    pub async fn apply_and_drain(&mut self, request: &Request) -> (Vec<WatchedEvent>, ZkResult) {
        let Some(client) = &self.client else {
            return (self.drain_events(), Err(ZkError::SessionExpired));
        };
        let (result, armed) = execute(client, request).await;
        self.sweep();
        let before = std::mem::take(&mut self.events);
        if let Some((path, watcher)) = armed {
            self.watches.arm(path, watcher);
        }
        (before, result)
    }

    /// Waits until an armed watch fired (see [`LiveSession::drain_events`]).
    pub async fn watch_fired(&mut self) {
        std::future::poll_fn(|cx| self.watches.poll_fired(cx)).await
    }

    /// A watcher of the session's connection state (`None` once closed).
    pub fn state_watcher(&self) -> Option<zkc::StateWatcher> {
        self.client.as_ref().map(zkc::Client::state_watcher)
    }

    /// The session's id and password (`None` once closed).
    pub fn session_info(&self) -> Option<zkc::SessionInfo> {
        self.client.as_ref().map(|client| client.session().clone())
    }

    /// The events that arrived so far, in arrival order between sweeps
    /// (sorted within one). Connection state changes after the connect come
    /// as type-`None` events; fast successive changes may be seen as one.
    pub fn drain_events(&mut self) -> Vec<WatchedEvent> {
        self.sweep();
        std::mem::take(&mut self.events)
    }

    /// A round trip to the server, then [`LiveSession::drain_events`]: ZooKeeper
    /// sends a session its notifications in order with its replies, so this
    /// returns every event the server sent before it answered.
    pub async fn collect_events(&mut self) -> Vec<WatchedEvent> {
        if let Some(client) = &self.client {
            // The answer does not matter, only that it comes after the events.
            let _ = client.check_stat("/").await;
        }
        self.drain_events()
    }

    /// Closes the session and waits until the server confirmed it: its
    /// ephemeral nodes are then deleted and their watchers notified. Events
    /// that reached this session before the close stay drainable.
    ///
    /// A detached session is closed through a second connection into it
    /// (its id and password), which is then dropped: that one's drop sends
    /// CloseSession. A session the server already ended is closed.
    pub async fn close(&mut self) -> Result<(), LiveError> {
        let Some(client) = self.client.take() else {
            return Ok(());
        };
        let (id, timeout_ms) = (self.session_id, self.session_timeout_ms);
        let outcome = if self.detached {
            let addr = self.addr.clone();
            close_detached(client, &addr, id, timeout_ms).await
        } else {
            close_owned(client, id, timeout_ms).await
        };
        self.events.extend(self.watches.sweep());
        self.watches.clear();
        outcome
    }

    /// Drops the handle without closing the session: on the server it lives
    /// on, with its ephemeral nodes, until its own timeout (counted from
    /// the last time it heard from this client). Only a session opened with
    /// [`LiveSession::connect_detached`] stays: dropping any other sends
    /// CloseSession if its connection is up. Events that reached this
    /// session before stay drainable; every request after fails with
    /// `SessionExpired`.
    pub fn abandon(&mut self) {
        if let Some(client) = self.client.take() {
            drop(client);
            self.events.extend(self.watches.sweep());
            self.watches.clear();
        }
    }

    /// Whether dropping this session's handle leaves it on the server.
    pub fn is_detached(&self) -> bool {
        self.detached
    }

    /// Number of armed watch receivers (diagnostics).
    pub fn armed_watch_count(&self) -> usize {
        self.watches.armed_count()
    }

    fn sweep(&mut self) {
        let state_change = self.state_change();
        let node_events = self.watches.sweep();
        match state_change {
            // A reconnect comes before the watch triggers it causes.
            Some(event) if event.state != KeeperState::Expired => {
                self.events.push(event);
                self.events.extend(node_events);
            }
            other => {
                self.events.extend(node_events);
                self.events.extend(other);
            }
        }
    }

    /// The connection state change since the last sweep, as a Java client's
    /// default watcher sees it; our own close is not reported.
    fn state_change(&mut self) -> Option<WatchedEvent> {
        let state = self.state_watcher.state();
        if state == self.reported_state {
            return None;
        }
        self.reported_state = state;
        let keeper_state = match state {
            zkc::SessionState::Disconnected => KeeperState::Disconnected,
            zkc::SessionState::SyncConnected | zkc::SessionState::ConnectedReadOnly => {
                KeeperState::SyncConnected
            }
            zkc::SessionState::Expired => KeeperState::Expired,
            zkc::SessionState::Closed | zkc::SessionState::AuthFailed => return None,
        };
        Some(WatchedEvent::state(keeper_state))
    }
}

/// Drops a session's own handle (CloseSession) and waits until the client
/// library says it ended.
async fn close_owned(
    client: zkc::Client,
    session_id: SessionId,
    timeout_ms: u64,
) -> Result<(), LiveError> {
    let mut state_watcher = client.state_watcher();
    drop(client);
    let wait = Duration::from_millis(timeout_ms.max(1_000) * 2);
    let closed = async {
        while !state_watcher.state().is_terminated() {
            state_watcher.changed().await;
        }
    };
    tokio::time::timeout(wait, closed)
        .await
        .map_err(|_| LiveError::CloseTimeout { session_id })
}

/// Drops a detached handle, then joins its session at `addr` on a
/// connection of its own and closes that one: the server ends the session.
async fn close_detached(
    client: zkc::Client,
    addr: &str,
    session_id: SessionId,
    timeout_ms: u64,
) -> Result<(), LiveError> {
    if client.state_watcher().state().is_terminated() {
        return Ok(()); // expired or closed: nothing left on the server
    }
    let info = client.session().clone();
    drop(client);
    match reattach(addr, timeout_ms, info).await {
        Ok(LiveSession {
            client: Some(owned),
            ..
        }) => close_owned(owned, session_id, timeout_ms).await,
        Ok(_) => Ok(()),
        Err(LiveError::Connect {
            source: zkc::Error::SessionExpired,
            ..
        }) => Ok(()),
        Err(error) => Err(error),
    }
}

/// Connects to the session again to close it. The first attempt may find
/// the dropped handle's connection not yet gone, or a loaded server slow to
/// answer (`NoHosts` from a one-pass connector, seen once in CI): a few
/// attempts, 100 ms apart, before giving up.
async fn reattach(
    addr: &str,
    timeout_ms: u64,
    info: zkc::SessionInfo,
) -> Result<LiveSession, LiveError> {
    let mut attempts_left = 3;
    loop {
        let attempt = LiveSession::connect_to(addr, timeout_ms, Some(info.clone())).await;
        match attempt {
            Err(LiveError::Connect {
                source: zkc::Error::NoHosts | zkc::Error::ConnectionLoss,
                ..
            }) if attempts_left > 1 => {
                attempts_left -= 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            outcome => return outcome,
        }
    }
}

/// Runs one request; returns its result and the watch its reply armed.
async fn execute(client: &zkc::Client, request: &Request) -> (ZkResult, Option<ArmedWatch>) {
    match request {
        Request::Create {
            path,
            data,
            mode,
            acl: Acls::Open,
        } => (create(client, path, data, *mode).await, None),
        Request::Check { path, version } => (check(client, path, *version).await, None),
        Request::Multi(ops) => (multi(client, ops).await, None),
        Request::MultiRead(reads) => (multi_read(client, reads).await, None),
        // The live driver does not carry a sans-IO recipe's persistent
        // watches (an async recipe calls `Client::watch` itself).
        Request::AddWatch { .. } => (Err(ZkError::Unimplemented), None),
        // Nor ACLs and identities: a sans-IO recipe's nodes are open to
        // anyone (an async recipe calls the crate's ACL calls itself).
        Request::Create { .. }
        | Request::GetAcl { .. }
        | Request::SetAcl { .. }
        | Request::AddAuth { .. }
        | Request::WhoAmI => (Err(ZkError::Unimplemented), None),
        Request::Exists { path, watch: true }
        | Request::GetData { path, watch: true }
        | Request::GetChildren { path, watch: true }
        | Request::GetChildren2 { path, watch: true } => {
            match read_and_watch(client, request).await {
                Ok((reply, watcher)) => (Ok(reply), Some((path.clone(), watcher))),
                Err(error) => (Err(error_from_client(&error)), None),
            }
        }
        _ => (
            plain(client, request)
                .await
                .map_err(|e| error_from_client(&e)),
            None,
        ),
    }
}

/// A read with `watch: true`: the reply and the watch's receiver.
async fn read_and_watch(
    client: &zkc::Client,
    request: &Request,
) -> Result<(Reply, zkc::OneshotWatcher), zkc::Error> {
    match request {
        Request::Exists { path, .. } => {
            let (stat, watcher) = client.check_and_watch_stat(path.as_str()).await?;
            Ok((exists_reply(stat), watcher))
        }
        Request::GetData { path, .. } => {
            let (data, stat, watcher) = client.get_and_watch_data(path.as_str()).await?;
            Ok((data_reply(data, &stat), watcher))
        }
        Request::GetChildren { path, .. } => {
            let (children, watcher) = client.list_and_watch_children(path.as_str()).await?;
            Ok((Reply::Children(children), watcher))
        }
        Request::GetChildren2 { path, .. } => {
            let (children, stat, watcher) = client.get_and_watch_children(path.as_str()).await?;
            Ok((children2_reply(children, &stat), watcher))
        }
        other => unreachable!("not a watching read: {other:?}"),
    }
}

/// A request that arms no watch and maps one to one onto a client call.
async fn plain(client: &zkc::Client, request: &Request) -> Result<Reply, zkc::Error> {
    match request {
        Request::Delete { path, version } => {
            client.delete(path.as_str(), Some(*version)).await?;
            Ok(Reply::Deleted)
        }
        Request::Exists { path, .. } => Ok(exists_reply(client.check_stat(path.as_str()).await?)),
        Request::GetData { path, .. } => {
            let (data, stat) = client.get_data(path.as_str()).await?;
            Ok(data_reply(data, &stat))
        }
        Request::SetData {
            path,
            data,
            version,
        } => {
            let stat = client.set_data(path.as_str(), data, Some(*version)).await?;
            Ok(Reply::DataSet(stat_from_client(&stat)))
        }
        Request::GetChildren { path, .. } => {
            Ok(Reply::Children(client.list_children(path.as_str()).await?))
        }
        Request::GetChildren2 { path, .. } => {
            let (children, stat) = client.get_children(path.as_str()).await?;
            Ok(children2_reply(children, &stat))
        }
        Request::Sync { path } => {
            client.sync(path.as_str()).await?;
            Ok(Reply::Synced { path: path.clone() })
        }
        Request::GetEphemerals { prefix } => {
            let paths = client.list_ephemerals(prefix.as_str()).await?;
            Ok(Reply::Ephemerals(
                paths.into_iter().map(server_path).collect(),
            ))
        }
        Request::GetAllChildrenNumber { path } => {
            let number = client.count_descendants_number(path.as_str()).await?;
            let number = u32::try_from(number).unwrap_or(u32::MAX);
            Ok(Reply::AllChildrenNumber(number))
        }
        other => unreachable!("not a plain request: {other:?}"),
    }
}

/// A path the server listed (the live client has no chroot).
fn server_path(path: String) -> Path {
    Path::new(path).unwrap_or_else(|error| panic!("the server listed an invalid path: {error}"))
}

async fn create(
    client: &zkc::Client,
    path: &Path,
    data: &[u8],
    mode: zk_recipes::zk::CreateMode,
) -> ZkResult {
    let options = create_options(mode)?;
    let (stat, sequence) = client
        .create(path.as_str(), data, &options)
        .await
        .map_err(|e| error_from_client(&e))?;
    // The client returns the sequence number, not the name: rebuild it the
    // way the server formats it (`%010d`).
    let created = if mode.is_sequential() {
        Path::new(format!("{path}{sequence}")).unwrap_or_else(|error| {
            panic!("the server created an invalid sequential name: {error}")
        })
    } else {
        path.clone()
    };
    Ok(Reply::Created {
        path: created,
        stat: stat_from_client(&stat),
    })
}

fn exists_reply(stat: Option<zkc::Stat>) -> Reply {
    Reply::Exists(stat.as_ref().map(stat_from_client))
}

fn data_reply(data: Vec<u8>, stat: &zkc::Stat) -> Reply {
    Reply::Data {
        data,
        stat: stat_from_client(stat),
    }
}

fn children2_reply(children: Vec<String>, stat: &zkc::Stat) -> Reply {
    Reply::Children2 {
        children,
        stat: stat_from_client(stat),
    }
}

async fn check(client: &zkc::Client, path: &Path, version: i32) -> ZkResult {
    let op = MultiOp::Check {
        path: path.clone(),
        version,
    };
    match multi(client, std::slice::from_ref(&op)).await {
        Ok(_) => Ok(Reply::Checked),
        Err(ZkError::MultiFailed { error, .. }) => Err(*error),
        Err(error) => Err(error),
    }
}

async fn multi(client: &zkc::Client, ops: &[MultiOp]) -> ZkResult {
    let mut writer = client.new_multi_writer();
    for (index, op) in ops.iter().enumerate() {
        // The client checks each op before sending; a refusal is reported
        // like the server's refusal of that op.
        add_op(&mut writer, op).map_err(|error| ZkError::MultiFailed {
            index,
            error: Box::new(error),
        })?;
    }
    let results = writer.commit().await.map_err(|error| match error {
        zkc::MultiWriteError::RequestFailed { source } => error_from_client(&source),
        zkc::MultiWriteError::OperationFailed { index, source } => ZkError::MultiFailed {
            index,
            error: Box::new(error_from_client(&source)),
        },
    })?;
    let results = results.into_iter().map(op_result_from_client).collect();
    Ok(Reply::Multi(results))
}

/// A multi-read through the client's `MultiReader`: one result per read.
async fn multi_read(client: &zkc::Client, reads: &[ReadOp]) -> ZkResult {
    let mut reader = client.new_multi_reader();
    for read in reads {
        let added = match read {
            ReadOp::GetData { path } => reader.add_get_data(path.as_str()),
            ReadOp::GetChildren { path } => reader.add_get_children(path.as_str()),
        };
        added.map_err(|error| error_from_client(&error))?;
    }
    let results = reader
        .commit()
        .await
        .map_err(|error| error_from_client(&error))?;
    Ok(Reply::MultiRead(
        results.into_iter().map(read_result_from_client).collect(),
    ))
}

fn read_result_from_client(result: zkc::MultiReadResult) -> ReadResult {
    match result {
        zkc::MultiReadResult::Data { data, stat } => ReadResult::Data {
            data,
            stat: stat_from_client(&stat),
        },
        zkc::MultiReadResult::Children { children } => ReadResult::Children(children),
        zkc::MultiReadResult::Error { err } => ReadResult::Error(error_from_client(&err)),
        other => panic!("a multi-read result zk_recipes::zk cannot express: {other:?}"),
    }
}

fn add_op(writer: &mut zkc::MultiWriter<'_>, op: &MultiOp) -> Result<(), ZkError> {
    let added = match op {
        MultiOp::Create {
            path,
            data,
            mode,
            acl: Acls::Open,
        } => writer.add_create(path.as_str(), data, &create_options(*mode)?),
        MultiOp::Create { .. } => return Err(ZkError::Unimplemented),
        MultiOp::Delete { path, version } => writer.add_delete(path.as_str(), Some(*version)),
        MultiOp::SetData {
            path,
            data,
            version,
        } => writer.add_set_data(path.as_str(), data, Some(*version)),
        MultiOp::Check { path, version } => writer.add_check_version(path.as_str(), *version),
    };
    added.map_err(|e| error_from_client(&e))
}

fn op_result_from_client(result: zkc::MultiWriteResult) -> OpResult {
    match result {
        zkc::MultiWriteResult::Check => OpResult::Checked,
        zkc::MultiWriteResult::Delete => OpResult::Deleted,
        zkc::MultiWriteResult::Create { path, stat } => OpResult::Created {
            path: Path::new(path)
                .unwrap_or_else(|error| panic!("the server created an invalid path: {error}")),
            stat: stat_from_client(&stat),
        },
        zkc::MultiWriteResult::SetData { stat } => OpResult::DataSet(stat_from_client(&stat)),
        other => panic!("unknown multi result {other:?}"),
    }
}
