//! Roots left on the server by live runs that were killed (SIGKILL, a
//! crash, a machine gone): found, named, and removed on request.
//!
//! A live run creates its root and an ephemeral *marker* beside it in one
//! multi: the root (`/zkcheck-live-<seed>-<pid>`) carries an [`RootOwner`]
//! payload (zkcheck's tag, pid, host, start time), the marker
//! (`<root>.running`) belongs to the run's admin session, which lives as
//! long as the run. A run that ends normally removes both; a killed run's
//! session expires (after its session timeout) and takes the marker with
//! it. So a root is **stale** when its payload says it is zkcheck's and its
//! marker is gone, unless its owner process still runs on this host (a run
//! whose admin session was lost is still alive). Anything else is never
//! touched: a root without zkcheck's payload is not ours, a root with its
//! marker belongs to a running run.
//!
//! [`find_stale_roots`] looks under the default root's parent (`/`) for
//! stale roots; `zkcheck live` names them at the start of a run with the
//! command that removes them ([`remove_stale_roots`], which judges each
//! root again and refuses a live or foreign one).

use crate::preflight::{check_server, PreflightError};
use crate::remove::remove_tree;
use crate::LiveSession;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, MultiOp, Path, Reply, Request, ZkError};

/// The name of every default root starts with this (see
/// [`crate::run::default_root`]); the scan looks at these only.
pub const DEFAULT_ROOT_PREFIX: &str = "zkcheck-live-";
/// The marker of root `R` is the ephemeral node `R.running`.
pub const MARKER_SUFFIX: &str = ".running";
/// The session timeout of the scan's own session.
const SCAN_SESSION_TIMEOUT_MS: u64 = 4_000;
/// The tag of a root's payload, and its format's version.
const PAYLOAD_TAG: &str = "zkcheck live root";

/// Who created a root: the payload written into it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootOwner {
    /// Always `PAYLOAD_TAG`: the root is zkcheck's.
    pub tag: String,
    pub pid: u32,
    pub host: String,
    pub started_unix_ms: u64,
}

impl RootOwner {
    /// This process, now.
    pub fn this_process() -> RootOwner {
        RootOwner {
            tag: PAYLOAD_TAG.to_string(),
            pid: std::process::id(),
            host: host_name(),
            started_unix_ms: unix_ms_now(),
        }
    }

    pub fn payload(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a RootOwner serializes")
    }

    /// The owner in a root's data, if the data is zkcheck's payload.
    pub fn parse(data: &[u8]) -> Option<RootOwner> {
        serde_json::from_slice::<RootOwner>(data)
            .ok()
            .filter(|owner| owner.tag == PAYLOAD_TAG)
    }

    /// Whether the owner process runs on this host now (as a zkcheck).
    fn runs_here(&self) -> bool {
        if self.host != host_name() {
            return false;
        }
        std::fs::read(format!("/proc/{}/cmdline", self.pid))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("zkcheck"))
    }

    /// `pid N on HOST, started S s ago`.
    pub fn describe(&self) -> String {
        let age_s = unix_ms_now().saturating_sub(self.started_unix_ms) / 1_000;
        format!(
            "pid {} on {}, started {} ago",
            self.pid,
            self.host,
            human_age(age_s)
        )
    }
}

/// A root left by a run that is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleRoot {
    pub root: Path,
    pub owner: RootOwner,
}

/// What a root is, judged now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootState {
    /// zkcheck's, and its run is gone.
    Stale(RootOwner),
    /// zkcheck's, and its run still runs (the reason).
    Running(String),
    /// Not a root zkcheck live created (or it vanished).
    NotZkcheck,
}

/// Why stale roots could not be listed or removed.
#[derive(Debug, thiserror::Error)]
pub enum StaleError {
    #[error(transparent)]
    Server(#[from] PreflightError),
    #[error("`{0}` is not a ZooKeeper path")]
    BadPath(String),
    #[error("cannot look for stale roots on the server: {0}")]
    Session(String),
    #[error("`{root}` is not a root left by zkcheck live (no zkcheck payload): not touched")]
    NotZkcheck { root: Path },
    #[error("`{root}` belongs to a live run that still runs ({why}): not touched")]
    Running { root: Path, why: String },
    #[error("could not remove `{root}`: {reason}")]
    Remove { root: Path, reason: String },
}

impl StaleError {
    /// True for bad input (exit 2): everything but a failed removal.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, StaleError::Remove { .. } | StaleError::Session(_))
    }
}

/// The ephemeral node beside `root` that lives as long as its run.
pub fn marker_of(root: &Path) -> Path {
    Path::new(format!("{}{MARKER_SUFFIX}", root.as_str()))
        .expect("a root's path with a suffix is a path")
}

/// The request that creates `root` (with `owner`'s payload) and its marker
/// (ephemeral, the caller's session) together.
pub fn create_root_request(root: &Path, owner: &RootOwner) -> Request {
    Request::Multi(vec![
        MultiOp::Create {
            path: root.clone(),
            data: owner.payload(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        },
        MultiOp::Create {
            path: marker_of(root),
            data: Vec::new(),
            mode: CreateMode::Ephemeral,
            acl: Acls::Open,
        },
    ])
}

/// Judges `root` now: zkcheck's payload, its marker, its owner process.
pub async fn judge_root(session: &mut LiveSession, root: &Path) -> Result<RootState, String> {
    let data = session
        .apply(&Request::GetData {
            path: root.clone(),
            watch: false,
        })
        .await;
    let owner = match data {
        Ok(Reply::Data { data, .. }) => RootOwner::parse(&data),
        Ok(_) | Err(ZkError::NoNode) => None,
        Err(error) => return Err(format!("reading {root}: {error:?}")),
    };
    let Some(owner) = owner else {
        return Ok(RootState::NotZkcheck);
    };
    let marker = marker_of(root);
    let marked = session
        .apply(&Request::Exists {
            path: marker.clone(),
            watch: false,
        })
        .await;
    match marked {
        Ok(Reply::Exists(Some(stat))) => Ok(RootState::Running(format!(
            "its marker {marker} is held by session 0x{:x}",
            stat.ephemeral_owner
        ))),
        Ok(_) if owner.runs_here() => Ok(RootState::Running(format!(
            "its process {} still runs here",
            owner.pid
        ))),
        Ok(_) => Ok(RootState::Stale(owner)),
        Err(error) => Err(format!("reading {marker}: {error:?}")),
    }
}

/// The stale roots under `/` (default roots only), by path.
pub async fn scan_stale_roots(session: &mut LiveSession) -> Result<Vec<StaleRoot>, String> {
    let top = Path::new("/".to_string()).expect("/ is a path");
    let children = match session
        .apply(&Request::GetChildren {
            path: top.clone(),
            watch: false,
        })
        .await
    {
        Ok(Reply::Children(children)) => children,
        other => return Err(format!("listing /: {other:?}")),
    };
    let mut names: Vec<String> = children
        .into_iter()
        .filter(|name| name.starts_with(DEFAULT_ROOT_PREFIX) && !name.ends_with(MARKER_SUFFIX))
        .collect();
    names.sort();
    let mut stale = Vec::new();
    for name in names {
        let Ok(root) = top.child(&name) else { continue };
        if let RootState::Stale(owner) = judge_root(session, &root).await? {
            stale.push(StaleRoot { root, owner });
        }
    }
    Ok(stale)
}

/// The stale roots on the server at `addr` (checked to be a ZooKeeper 3.x
/// first). Blocks; call it outside any tokio runtime.
pub fn find_stale_roots(addr: &str) -> Result<Vec<StaleRoot>, StaleError> {
    check_server(addr)?;
    with_session(addr, |mut session| async move {
        let found = scan_stale_roots(&mut session)
            .await
            .map_err(StaleError::Session);
        let _ = session.close().await;
        found
    })
}

/// Removes each of `roots` from the server at `addr` after judging it
/// again: a root that is not zkcheck's or whose run still runs is refused
/// (and the roots after it are not touched). Returns the roots removed.
pub fn remove_stale_roots(addr: &str, roots: &[String]) -> Result<Vec<Path>, StaleError> {
    let paths = roots
        .iter()
        .map(|root| Path::new(root.clone()).map_err(|_| StaleError::BadPath(root.clone())))
        .collect::<Result<Vec<Path>, StaleError>>()?;
    check_server(addr)?;
    with_session(addr, |mut session| async move {
        let mut removed = Vec::new();
        let mut outcome = Ok(());
        for root in paths {
            outcome = remove_one(&mut session, &root).await;
            if outcome.is_err() {
                break;
            }
            removed.push(root);
        }
        let _ = session.close().await;
        outcome.map(|()| removed)
    })
}

async fn remove_one(session: &mut LiveSession, root: &Path) -> Result<(), StaleError> {
    let state = judge_root(session, root)
        .await
        .map_err(StaleError::Session)?;
    match state {
        RootState::Stale(_) => {}
        RootState::Running(why) => {
            return Err(StaleError::Running {
                root: root.clone(),
                why,
            })
        }
        RootState::NotZkcheck => return Err(StaleError::NotZkcheck { root: root.clone() }),
    }
    remove_tree(session, root)
        .await
        .map_err(|reason| StaleError::Remove {
            root: root.clone(),
            reason,
        })
}

/// Runs `work` with a fresh session at `addr` on a runtime of its own.
fn with_session<T, F>(addr: &str, work: impl FnOnce(LiveSession) -> F) -> Result<T, StaleError>
where
    F: std::future::Future<Output = Result<T, StaleError>>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| StaleError::Session(format!("no tokio runtime: {error}")))?;
    runtime.block_on(async {
        let session = LiveSession::connect(addr, SCAN_SESSION_TIMEOUT_MS)
            .await
            .map_err(|error| StaleError::Session(error.to_string()))?;
        work(session).await
    })
}

/// This machine's host name (empty if it has none).
fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into our buffer.
    let status = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if status != 0 {
        return String::new();
    }
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

fn human_age(seconds: u64) -> String {
    match seconds {
        0..=119 => format!("{seconds} s"),
        120..=7_199 => format!("{} min", seconds / 60),
        7_200..=172_799 => format!("{} h", seconds / 3_600),
        _ => format!("{} days", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_zkchecks_payload_is_an_owner() {
        let owner = RootOwner::this_process();
        assert_eq!(RootOwner::parse(&owner.payload()), Some(owner.clone()));
        assert_eq!(RootOwner::parse(b""), None);
        assert_eq!(RootOwner::parse(b"mine"), None);
        let mut foreign = owner;
        foreign.tag = "something else".to_string();
        assert_eq!(RootOwner::parse(&foreign.payload()), None);
    }

    #[test]
    fn this_process_runs_here_and_a_dead_pid_does_not() {
        // The test binary's name is not `zkcheck`: an owner that is a
        // zkcheck is what counts, and pid 0 never is one.
        let mut owner = RootOwner::this_process();
        owner.pid = 0;
        assert!(!owner.runs_here());
        owner.host = "another-host".to_string();
        owner.pid = std::process::id();
        assert!(!owner.runs_here(), "another host's pid says nothing here");
    }

    #[test]
    fn the_marker_sits_beside_the_root() {
        let root = Path::new("/zkcheck-live-3-42".to_string()).unwrap();
        assert_eq!(marker_of(&root).as_str(), "/zkcheck-live-3-42.running");
        let Request::Multi(ops) = create_root_request(&root, &RootOwner::this_process()) else {
            panic!("a multi");
        };
        assert!(matches!(
            &ops[1],
            MultiOp::Create { mode: CreateMode::Ephemeral, path, .. } if *path == marker_of(&root)
        ));
    }

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(human_age(5), "5 s");
        assert_eq!(human_age(600), "10 min");
        assert_eq!(human_age(10_800), "3 h");
        assert_eq!(human_age(3 * 86_400), "3 days");
    }
}
