//! One live run of a scenario, end to end: the checks before anything is
//! written (what the scenario asks for can be injected for real, the
//! address answers, the server is a ZooKeeper 3.x, the run's root does not
//! exist), the run's own root directory, the run itself
//! ([`zk_sim::live`] with a [`ZkBackend`]), and the removal of everything
//! under the root at the end: also after a failed run or Ctrl-C.

use crate::backend::{walk_tree, ZkBackend};
use crate::preflight::{check_server, PreflightError};
use crate::LiveSession;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zk_recipes::zk::{CreateMode, Path, Reply, Request, ZkError};
use zk_sim::live::unsupported;
use zk_sim::scenario::Scenario;
use zk_sim::world::RunReport;

/// How long removing the root may keep retrying (sessions closing late
/// leave ephemerals for a moment).
const REMOVE_PATIENCE: Duration = Duration::from_secs(30);

/// What a live run is given.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// `HOST:PORT` of the server.
    pub addr: String,
    pub seed: u64,
    /// The run's directory; by default `/zkcheck-live-<seed>-<pid>`.
    pub root: Option<String>,
}

/// A finished live run.
#[derive(Debug)]
pub struct LiveRun {
    pub report: RunReport,
    /// The server's version, from `srvr`.
    pub version: String,
    pub root: Path,
    /// Wall time of the run proper (the root's creation and removal excluded).
    pub wall: Duration,
}

/// Why a live run did not happen or did not finish cleanly.
#[derive(Debug, thiserror::Error)]
pub enum LiveRunError {
    /// The scenario asks for something a real server cannot do (names the key).
    #[error("the scenario cannot run live: {0}")]
    Unsupported(String),
    #[error(transparent)]
    Server(#[from] PreflightError),
    #[error("--root `{root}`: {reason}")]
    BadRoot { root: String, reason: String },
    #[error("the run's root `{root}` already exists on the server: refusing to touch it (pick another with --root, or remove it)")]
    RootExists { root: Path },
    #[error("cannot set up the run on the server: {0}")]
    Setup(String),
    /// The run was set up but failed on the way (the root was removed).
    #[error("the live run failed: {0}")]
    Run(String),
    #[error("interrupted; the run's root `{root}` was removed")]
    Interrupted { root: Path },
    #[error("could not remove the run's root `{root}`: {reason}")]
    Cleanup { root: Path, reason: String },
}

impl LiveRunError {
    /// True for bad input (exit 2 with nothing written on the server).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            LiveRunError::Unsupported(_)
                | LiveRunError::Server(_)
                | LiveRunError::BadRoot { .. }
                | LiveRunError::RootExists { .. }
        )
    }
}

/// The root a run uses when none is given.
pub fn default_root(seed: u64) -> String {
    format!("/zkcheck-live-{seed}-{}", std::process::id())
}

/// Runs `scenario` once against the server at `options.addr`. Blocks; starts
/// its own tokio runtime (call it outside any runtime).
pub fn run_live(scenario: &Scenario, options: &LiveOptions) -> Result<LiveRun, LiveRunError> {
    if let Some(why) = unsupported(scenario) {
        return Err(LiveRunError::Unsupported(why));
    }
    let root_text = options
        .root
        .clone()
        .unwrap_or_else(|| default_root(options.seed));
    let root = Path::new(root_text.clone())
        .ok()
        .filter(|root| root.as_str() != "/" && !root.as_str().starts_with("/zookeeper"))
        .ok_or_else(|| LiveRunError::BadRoot {
            root: root_text.clone(),
            reason: "not a ZooKeeper path of its own (absolute, not `/`, not under /zookeeper)"
                .to_string(),
        })?;
    let rooted = scenario
        .under_root(&root)
        .map_err(|reason| LiveRunError::BadRoot {
            root: root_text,
            reason,
        })?;
    let version = check_server(&options.addr)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| LiveRunError::Setup(format!("no tokio runtime: {error}")))?;
    runtime.block_on(async {
        let session_timeout_ms = scenario.raw.timing.session_timeout_ms;
        let mut admin = LiveSession::connect(&options.addr, session_timeout_ms)
            .await
            .map_err(|error| LiveRunError::Setup(error.to_string()))?;
        let created = admin
            .apply(&Request::Create {
                path: root.clone(),
                data: Vec::new(),
                mode: CreateMode::Persistent,
            })
            .await;
        match created {
            Ok(_) => {}
            Err(ZkError::NodeExists) => {
                let _ = admin.close().await;
                return Err(LiveRunError::RootExists { root: root.clone() });
            }
            Err(error) => {
                let _ = admin.close().await;
                return Err(LiveRunError::Setup(format!("creating {root}: {error:?}")));
            }
        }
        let backend = Arc::new(ZkBackend::new(&options.addr, session_timeout_ms));
        let runner = rooted.live_runner();
        let started = Instant::now();
        // Its own task: a panic in the run ends the task, not this
        // function, so the root is removed whatever happened.
        let (seed, run_root, run_backend) = (options.seed, root.clone(), backend.clone());
        let mut task = tokio::spawn(async move { runner.run(seed, &run_root, run_backend).await });
        let outcome = tokio::select! {
            finished = &mut task => Some(finished),
            _ = tokio::signal::ctrl_c() => {
                task.abort();
                let _ = (&mut task).await;
                None
            }
        };
        let wall = started.elapsed();
        backend.close().await;
        let removed = remove_tree(&mut admin, &root).await;
        let _ = admin.close().await;
        if let Err(reason) = removed {
            return Err(LiveRunError::Cleanup { root, reason });
        }
        match outcome {
            None => Err(LiveRunError::Interrupted { root }),
            Some(Err(panicked)) => Err(LiveRunError::Run(format!("the driver failed: {panicked}"))),
            Some(Ok(Err(error))) => Err(LiveRunError::Run(error.to_string())),
            Some(Ok(Ok(report))) => Ok(LiveRun {
                report,
                version,
                root,
                wall,
            }),
        }
    })
}

/// Deletes `root` and everything under it, retrying while sessions that
/// just closed still hold ephemerals; checks it is gone.
async fn remove_tree(admin: &mut LiveSession, root: &Path) -> Result<(), String> {
    let deadline = Instant::now() + REMOVE_PATIENCE;
    loop {
        match delete_below(admin, root).await {
            Ok(()) => break,
            Err(error) if Instant::now() >= deadline => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    match admin
        .apply(&Request::Exists {
            path: root.clone(),
            watch: false,
        })
        .await
    {
        Ok(Reply::Exists(None)) => Ok(()),
        other => Err(format!("still there after removal: {other:?}")),
    }
}

/// One pass: every node under `root`, children first, then `root`.
async fn delete_below(admin: &mut LiveSession, root: &Path) -> Result<(), String> {
    let order = walk_tree(admin, root).await?;
    for (path, _) in order.iter().rev() {
        let deleted = admin
            .apply(&Request::Delete {
                path: path.clone(),
                version: zk_recipes::zk::ANY_VERSION,
            })
            .await;
        match deleted {
            Ok(_) | Err(ZkError::NoNode) => {}
            Err(error) => return Err(format!("deleting {path}: {error:?}")),
        }
    }
    Ok(())
}
