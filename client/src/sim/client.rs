//! [`Client`]: one session of a simulated client, with the real crate's
//! methods. Every request is handed to the session when the method is
//! called (not when its future is first polled), so requests are ordered
//! at the call, as the real crate orders them.

use super::errors::{from_zk, uncovered, unexpected_reply};
use super::paths::Root;
use super::types::{CreateOptions, CreateSequence, SessionInfo};
use super::watcher::{OneshotWatcher, PersistentWatcher, StateWatcher};
use super::{convert, Acl, AddWatchMode, AuthUser, EnsembleUpdate, Error, SessionId, SessionState};
use madsim::task::NodeId;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::time::Duration;
use upstream::Stat;
use zk_recipes::zk::{self, Path, Request, ZkError};
use zk_sim::async_recipe::{Bridge, Reply as PendingReply, Ticket, WatchEvent};

type Result<T, E = Error> = std::result::Result<T, E>;

/// A ZooKeeper session of the simulated client the task runs on.
#[derive(Clone)]
pub struct Client {
    pub(crate) bridge: Bridge,
    pub(crate) session: SessionInfo,
    pub(crate) root: Root,
    session_timeout: Duration,
    /// The simulated node the client runs on: where its background work
    /// (a lock's deletes) runs.
    node: NodeId,
}

/// A request handed to the session: the reply to come and the watch it may
/// set, or the error it failed with at once.
pub(crate) enum Sent {
    Pending {
        reply: PendingReply,
        watch: Option<WatchEvent>,
    },
    Failed(ZkError),
}

impl Sent {
    /// The reply, and the watch if the request set one.
    pub(crate) async fn outcome(self) -> Result<(zk::Reply, Option<WatchEvent>), ZkError> {
        match self {
            Sent::Failed(error) => Err(error),
            // An error drops the watch: that forgets it.
            Sent::Pending { reply, watch } => Ok((reply.await?, watch)),
        }
    }
}

/// A successful reply as a method finishes it.
struct Answer {
    reply: zk::Reply,
    watcher: Option<OneshotWatcher>,
    root: Root,
}

impl Answer {
    fn watcher(&mut self, call: &str) -> Result<OneshotWatcher> {
        self.watcher.take().ok_or_else(|| {
            Error::UnexpectedError(format!("zkcheck's simulated `{call}` set no watch"))
        })
    }
}

impl Client {
    pub(crate) fn new(bridge: Bridge, session: SessionId, root: Root) -> Client {
        let session_timeout = Duration::from_millis(bridge.app().session_timeout_ms());
        Client {
            bridge,
            session: SessionInfo {
                id: session,
                readonly: false,
            },
            root,
            session_timeout,
            node: madsim::plugin::node(),
        }
    }

    /// Runs `work` as a simulated task on the client's node, as the real
    /// crate spawns its background work on its runtime. Outside a running
    /// simulation (the world torn down) there is nothing left to do it on:
    /// it is dropped.
    pub(crate) fn spawn_background(&self, work: impl Future<Output = ()> + Send + 'static) {
        let node = madsim::runtime::Handle::try_current()
            .ok()
            .and_then(|runtime| runtime.get_node(self.node));
        if let Some(node) = node {
            // Detached, as the real crate's `asyncs::spawn`.
            drop(node.spawn(work));
        }
    }

    /// Path of the chroot.
    pub fn path(&self) -> &str {
        self.root.path()
    }

    /// Session info.
    pub fn session(&self) -> &SessionInfo {
        &self.session
    }

    /// Session id.
    pub fn session_id(&self) -> SessionId {
        self.session.id()
    }

    /// Consumes this client into its session info.
    pub fn into_session(self) -> SessionInfo {
        self.session
    }

    /// The session timeout (the simulated world's).
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// Latest session state.
    pub fn state(&self) -> SessionState {
        convert::session_state(self.bridge.state(self.session.zk_id()))
    }

    /// A [`StateWatcher`] of the states after the current one.
    pub fn state_watcher(&self) -> StateWatcher {
        StateWatcher::new(self.bridge.clone(), self.session.zk_id())
    }

    /// Changes the root to an absolute path; the old client back if the
    /// path is invalid. Existing watchers are not affected.
    pub fn chroot<'a>(
        mut self,
        path: impl Into<Cow<'a, str>>,
    ) -> std::result::Result<Client, Client> {
        if self.root.change(path) {
            Ok(self)
        } else {
            Err(self)
        }
    }

    /// Hands `request` to the session now.
    pub(crate) fn submit(&self, request: Request) -> Sent {
        match self.bridge.submit(self.session.zk_id(), request) {
            Ticket::Sent { id, watch } => Sent::Pending {
                reply: self.bridge.reply(id),
                watch: watch.then(|| self.bridge.watcher(id)),
            },
            Ticket::Failed(error) => Sent::Failed(error),
        }
    }

    /// Sends `request` now (if it was built); the future finishes its reply.
    fn call<T: Send + 'static>(
        &self,
        request: Result<Request>,
        finish: impl FnOnce(Answer) -> Result<T> + Send + 'static,
    ) -> impl Future<Output = Result<T>> + Send + 'static {
        let sent = request.map(|request| self.submit(request));
        let root = self.root.clone();
        async move {
            let (reply, watch) = sent?.outcome().await.map_err(from_zk)?;
            let watcher = watch.map(|event| OneshotWatcher::new(root.clone(), event));
            finish(Answer {
                reply,
                watcher,
                root,
            })
        }
    }

    /// A validated path under the root.
    pub(crate) fn server_path(&self, path: &str) -> Result<Path> {
        Ok(self.root.resolve(path, false)?.path)
    }

    /// The server path of a create (checked as the real crate does).
    pub(crate) fn create_path(&self, path: &str, options: &CreateOptions<'_>) -> Result<Path> {
        options.validate()?;
        let target = self.root.resolve(path, options.is_sequential())?;
        if target.is_root {
            return Err(Error::BadArguments(&"can not create root node"));
        }
        Ok(target.path)
    }

    /// The server path of a delete (not the root).
    pub(crate) fn delete_path(&self, path: &str) -> Result<Path> {
        let target = self.root.resolve(path, false)?;
        if target.is_root {
            return Err(Error::BadArguments(&"can not delete root node"));
        }
        Ok(target.path)
    }

    /// Makes directories up to `path` (`mkdir -p`): not atomic, no
    /// NodeExists; NoNode if the chroot does not exist.
    pub async fn mkdir(&self, path: &str, options: &CreateOptions<'_>) -> Result<()> {
        options.validate_as_directory()?;
        self.mkdir_internally(path, options).await
    }

    pub(crate) async fn mkdir_internally(
        &self,
        path: &str,
        options: &CreateOptions<'_>,
    ) -> Result<()> {
        let mut end = path.len();
        loop {
            match self.create(&path[..end], Default::default(), options).await {
                Ok(_) | Err(Error::NodeExists) => {
                    if end >= path.len() {
                        return Ok(());
                    }
                    end = path[end + 1..]
                        .find('/')
                        .map_or(path.len(), |at| end + 1 + at);
                }
                Err(Error::NoNode) => match path[..end].rfind('/') {
                    Some(at) if at > 0 => end = at,
                    _ => return Err(Error::NoNode),
                },
                Err(error) => return Err(error),
            }
        }
    }

    /// Creates a node; the sequence is parsed from the created path for
    /// sequential modes, -1 otherwise.
    pub fn create<'a: 'f, 'b: 'f, 'f>(
        &'a self,
        path: &'b str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'f {
        let request = self
            .create_path(path, options)
            .map(|target| Request::Create {
                path: target,
                data: data.to_vec(),
                mode: options.zk_mode(),
                acl: options.zk_acl(),
            });
        let sequential = options.is_sequential();
        let prefix = path.to_string();
        self.call(request, move |Answer { reply, root, .. }| match reply {
            zk::Reply::Created { path, stat } => {
                let sequence = if sequential {
                    CreateSequence::parse(&root.strip(path.as_str())?, &prefix)?
                } else {
                    CreateSequence(-1)
                };
                Ok((convert::stat(stat), sequence))
            }
            other => Err(unexpected_reply("create", &other)),
        })
    }

    /// Deletes a node (any version with `None`).
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send {
        let request = self.delete_path(path).map(|target| Request::Delete {
            path: target,
            version: expected_version.unwrap_or(zk::ANY_VERSION),
        });
        self.call(request, |answer| match answer.reply {
            zk::Reply::Deleted => Ok(()),
            other => Err(unexpected_reply("delete", &other)),
        })
    }

    fn get_data_request(&self, path: &str, watch: bool) -> Result<Request> {
        Ok(Request::GetData {
            path: self.server_path(path)?,
            watch,
        })
    }

    /// Data and stat of a node.
    pub fn get_data(&self, path: &str) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send {
        self.call(self.get_data_request(path, false), |answer| {
            match answer.reply {
                zk::Reply::Data { data, stat } => Ok((data, convert::stat(stat))),
                other => Err(unexpected_reply("get_data", &other)),
            }
        })
    }

    /// Data and stat of a node, and a watch on its data change and deletion.
    pub fn get_and_watch_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher)>> + Send + '_ {
        self.call(self.get_data_request(path, true), |mut answer| {
            let watcher = answer.watcher("get_and_watch_data")?;
            match answer.reply {
                zk::Reply::Data { data, stat } => Ok((data, convert::stat(stat), watcher)),
                other => Err(unexpected_reply("get_and_watch_data", &other)),
            }
        })
    }

    fn exists_request(&self, path: &str, watch: bool) -> Result<Request> {
        Ok(Request::Exists {
            path: self.server_path(path)?,
            watch,
        })
    }

    /// The stat of a node, `None` if it does not exist.
    pub fn check_stat(&self, path: &str) -> impl Future<Output = Result<Option<Stat>>> + Send {
        self.call(self.exists_request(path, false), |answer| {
            match answer.reply {
                zk::Reply::Exists(stat) => Ok(stat.map(convert::stat)),
                other => Err(unexpected_reply("check_stat", &other)),
            }
        })
    }

    /// The stat of a node, and a watch on its creation, data change and
    /// deletion (set whether the node exists or not).
    pub fn check_and_watch_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher)>> + Send + '_ {
        self.call(self.exists_request(path, true), |mut answer| {
            let watcher = answer.watcher("check_and_watch_stat")?;
            match answer.reply {
                zk::Reply::Exists(stat) => Ok((stat.map(convert::stat), watcher)),
                other => Err(unexpected_reply("check_and_watch_stat", &other)),
            }
        })
    }

    /// Sets a node's data (any version with `None`); its new stat.
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send {
        let request = self.server_path(path).map(|target| Request::SetData {
            path: target,
            data: data.to_vec(),
            version: expected_version.unwrap_or(zk::ANY_VERSION),
        });
        self.call(request, |answer| match answer.reply {
            zk::Reply::DataSet(stat) => Ok(convert::stat(stat)),
            other => Err(unexpected_reply("set_data", &other)),
        })
    }

    fn children_request(&self, path: &str, watch: bool, with_stat: bool) -> Result<Request> {
        let path = self.server_path(path)?;
        Ok(if with_stat {
            Request::GetChildren2 { path, watch }
        } else {
            Request::GetChildren { path, watch }
        })
    }

    /// A node's children (names), in the server's order.
    pub fn list_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + '_ {
        self.call(
            self.children_request(path, false, false),
            |answer| match answer.reply {
                zk::Reply::Children(children) => Ok(children),
                other => Err(unexpected_reply("list_children", &other)),
            },
        )
    }

    /// A node's children, and a watch on their changes and the node's
    /// deletion.
    pub fn list_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher)>> + Send + '_ {
        self.call(self.children_request(path, true, false), |mut answer| {
            let watcher = answer.watcher("list_and_watch_children")?;
            match answer.reply {
                zk::Reply::Children(children) => Ok((children, watcher)),
                other => Err(unexpected_reply("list_and_watch_children", &other)),
            }
        })
    }

    /// A node's children and its stat.
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat)>> + Send {
        self.call(
            self.children_request(path, false, true),
            |answer| match answer.reply {
                zk::Reply::Children2 { children, stat } => Ok((children, convert::stat(stat))),
                other => Err(unexpected_reply("get_children", &other)),
            },
        )
    }

    /// A node's children and stat, and a watch on the children's changes
    /// and the node's deletion.
    pub fn get_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat, OneshotWatcher)>> + Send + '_ {
        self.call(self.children_request(path, true, true), |mut answer| {
            let watcher = answer.watcher("get_and_watch_children")?;
            match answer.reply {
                zk::Reply::Children2 { children, stat } => {
                    Ok((children, convert::stat(stat), watcher))
                }
                other => Err(unexpected_reply("get_and_watch_children", &other)),
            }
        })
    }

    /// Syncs the connected server with the leader.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + '_ {
        let request = self.server_path(path).map(|path| Request::Sync { path });
        self.call(request, |answer| match answer.reply {
            zk::Reply::Synced { .. } => Ok(()),
            other => Err(unexpected_reply("sync", &other)),
        })
    }

    /// How many nodes are under `path`, at any depth (NoNode if it does
    /// not exist). ZooKeeper's own `/zookeeper` subtree is not simulated:
    /// at `/` the count is a real server's less its three nodes there.
    pub fn count_descendants_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<usize>> + Send {
        let request = self
            .server_path(path)
            .map(|path| Request::GetAllChildrenNumber { path });
        self.call(request, |answer| match answer.reply {
            zk::Reply::AllChildrenNumber(number) => Ok(number as usize),
            other => Err(unexpected_reply("count_descendants_number", &other)),
        })
    }

    /// This session's ephemeral nodes whose path starts with `path` as text
    /// (the node itself included), relative to the chroot; no NoNode.
    pub fn list_ephemerals(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + '_ {
        let request = self
            .server_path(path)
            .map(|prefix| Request::GetEphemerals { prefix });
        self.call(request, |answer| match answer.reply {
            zk::Reply::Ephemerals(paths) => paths
                .iter()
                .map(|path| answer.root.strip(path.as_str()))
                .collect(),
            other => Err(unexpected_reply("list_ephemerals", &other)),
        })
    }

    /// A node's ACL and stat (READ or ADMIN on it; without ADMIN digest
    /// ids are shown with `x` for their hash).
    pub fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + '_ {
        let request = self.server_path(path).map(|path| Request::GetAcl { path });
        self.call(request, |answer| match answer.reply {
            zk::Reply::Acl { acl, stat } => Ok((convert::acls_from_zk(&acl), convert::stat(stat))),
            other => Err(unexpected_reply("get_acl", &other)),
        })
    }

    /// Sets a node's ACL if its ACL version matches (any with `None`).
    pub fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        expected_acl_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + '_ {
        let request = self.server_path(path).map(|path| Request::SetAcl {
            path,
            acl: convert::acls_to_zk(acl),
            version: expected_acl_version.unwrap_or(zk::ANY_VERSION),
        });
        self.call(request, |answer| match answer.reply {
            zk::Reply::AclSet(stat) => Ok(convert::stat(stat)),
            other => Err(unexpected_reply("set_acl", &other)),
        })
    }

    /// A persistent watch on `path` (which need not exist): `Persistent`
    /// hears the path's node events, children changes included;
    /// `PersistentRecursive` the path's and every descendant's, without
    /// children changes. Both hear the session's states.
    pub fn watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + '_ {
        let request = self.server_path(path).map(|path| Request::AddWatch {
            path,
            mode: match mode {
                AddWatchMode::Persistent => zk::AddWatchMode::Persistent,
                AddWatchMode::PersistentRecursive => zk::AddWatchMode::PersistentRecursive,
            },
        });
        let sent = request.map(|request| self.bridge.submit(self.session.zk_id(), request));
        let (bridge, root) = (self.bridge.clone(), self.root.clone());
        async move {
            let id = match sent? {
                Ticket::Sent { id, .. } => id,
                Ticket::Failed(error) => return Err(from_zk(error)),
            };
            // Taken before the reply: events that come right after it wait here.
            let events = bridge.persistent_watcher(id);
            match bridge.reply(id).await {
                Ok(zk::Reply::WatchAdded) => Ok(PersistentWatcher::new(root, events)),
                Ok(other) => Err(unexpected_reply("watch", &other)),
                Err(error) => Err(from_zk(error)),
            }
        }
    }

    /// Authenticates the session (`digest` with `user:password`, or `ip`):
    /// as the real crate, the identity is sent again first on every
    /// reconnect, and an addAuth a dropped connection interrupted is sent
    /// again, not failed. Another scheme fails naming itself: the session
    /// the real server then fails (`AuthFailed`) is not simulated.
    pub fn auth(&self, scheme: &str, auth: &[u8]) -> impl Future<Output = Result<()>> + Send + '_ {
        let request = match scheme {
            "digest" | "ip" => Ok(Request::AddAuth {
                scheme: scheme.to_string(),
                auth: auth.to_vec(),
            }),
            _ => Err(uncovered(&format!("auth` with scheme `{scheme}"))),
        };
        self.call(request, |answer| match answer.reply {
            zk::Reply::AuthAdded => Ok(()),
            other => Err(unexpected_reply("auth", &other)),
        })
    }

    /// The identities of the session (whoAmI): `ip` with the client's
    /// address (every simulated client is on the loopback), then those it
    /// authenticated as.
    pub fn list_auth_users(&self) -> impl Future<Output = Result<Vec<AuthUser>>> + Send {
        self.call(Ok(Request::WhoAmI), |answer| match answer.reply {
            zk::Reply::AuthIds(ids) => Ok(convert::auth_users(&ids)),
            other => Err(unexpected_reply("list_auth_users", &other)),
        })
    }

    /// `/zookeeper/config`'s data and stat, outside any chroot; a
    /// standalone server's (empty).
    pub fn get_config(&self) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send {
        let config = self.config_read(false);
        async move {
            let (data, stat, _) = config.await?;
            Ok((data, stat))
        }
    }

    /// [`Client::get_config`] and a watch on the node.
    pub fn get_and_watch_config(
        &self,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher)>> + Send {
        let config = self.config_read(true);
        async move {
            let (data, stat, watcher) = config.await?;
            let watcher = watcher.ok_or_else(|| {
                Error::UnexpectedError("zkcheck's simulated server set no config watch".into())
            })?;
            Ok((data, stat, watcher))
        }
    }

    /// Reads the config node (not under the chroot), with a watch if asked.
    fn config_read(
        &self,
        watch: bool,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, Option<OneshotWatcher>)>> + Send {
        let path = Path::new(zk_sim::server::CONFIG_NODE).expect("a valid path");
        let sent = self.submit(Request::GetData { path, watch });
        async move {
            let (reply, watch) = sent.outcome().await.map_err(from_zk)?;
            let watcher = watch.map(|event| OneshotWatcher::new(Root::default(), event));
            match reply {
                zk::Reply::Data { data, stat } => Ok((data, convert::stat(stat), watcher)),
                other => Err(unexpected_reply("get_config", &other)),
            }
        }
    }

    /// Not covered: fails naming the call.
    pub fn update_ensemble<'a, I: Iterator<Item = &'a str> + Clone>(
        &self,
        _update: EnsembleUpdate<'a, I>,
        _expected_zxid: Option<i64>,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send {
        fail_uncovered(Ok(()), "update_ensemble")
    }
}

/// A call the simulation does not cover: a path error first (as the real
/// crate validates before sending), else the uncovered-call error.
pub(crate) fn fail_uncovered<P, T: Send>(
    checked: Result<P>,
    call: &str,
) -> impl Future<Output = Result<T>> + Send {
    let error = match checked {
        Err(error) => error,
        Ok(_) => uncovered(call),
    };
    std::future::ready(Err(error))
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("chroot", &self.root.path())
            .field("session", &self.session)
            .field("session_timeout", &self.session_timeout)
            .finish_non_exhaustive()
    }
}
