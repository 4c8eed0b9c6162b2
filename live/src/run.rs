//! One live run of a scenario, end to end: the checks before anything is
//! written (what the scenario asks for can be injected for real, the
//! process may open the file descriptors the run needs, the address
//! answers, the server is a ZooKeeper 3.x, the run's root does not exist),
//! the run's own root directory (with its owner payload and its marker, see
//! [`crate::stale`]), the run itself ([`zk_sim::live`] with a
//! [`ZkBackend`]), and the removal of everything under the root at the end:
//! also after a failed run and on SIGINT, SIGTERM or SIGHUP (a second
//! signal during that removal abandons it and names the root left behind).

use crate::async_run::AsyncRunner;
use crate::backend::ZkBackend;
use crate::descriptors::{ensure_descriptors, DescriptorBudget, DescriptorError};
use crate::preflight::{check_server, PreflightError};
use crate::remove::remove_tree;
use crate::stale::{create_root_request, marker_of, RootOwner};
use crate::LiveSession;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, Signal, SignalKind};
use zk_recipes::zk::{Path, Request, ZkError};
use zk_sim::live::{Backend, LiveRunner};
use zk_sim::scenario::unsupported;
use zk_sim::scenario::Scenario;
use zk_sim::world::RunReport;

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
    /// Whether the open-file limit had to be raised for the run.
    pub descriptors: DescriptorBudget,
}

/// Why a live run did not happen or did not finish cleanly.
#[derive(Debug, thiserror::Error)]
pub enum LiveRunError {
    /// The scenario asks for something a real server cannot do (names the key).
    #[error("the scenario cannot run live: {0}")]
    Unsupported(String),
    #[error(transparent)]
    Server(#[from] PreflightError),
    /// Even the hard open-file limit is below what the run needs.
    #[error(transparent)]
    Descriptors(#[from] DescriptorError),
    #[error("--root `{root}`: {reason}")]
    BadRoot { root: String, reason: String },
    #[error("the run's root `{root}` (or its marker `{root}.running`) already exists on the server: refusing to touch it (pick another with --root, or remove it)")]
    RootExists { root: Path },
    #[error("cannot set up the run on the server: {0}")]
    Setup(String),
    /// The run was set up but failed on the way (the root was removed).
    #[error("the live run failed: {0}")]
    Run(String),
    /// The harness itself failed during the run (a socket it could not
    /// open for lack of descriptors, a panic in the driver): no verdict,
    /// and not the recipe's fault (the root was removed).
    #[error("zkcheck live failed during the run (no verdict on the recipe): {0}")]
    Harness(String),
    #[error("interrupted by {signal}; the run's root `{root}` was removed")]
    Interrupted { root: Path, signal: &'static str },
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
                | LiveRunError::Descriptors(_)
                | LiveRunError::BadRoot { .. }
                | LiveRunError::RootExists { .. }
        )
    }

    /// True when zkcheck itself failed (exit 3), not the setup or the server.
    pub fn is_internal(&self) -> bool {
        matches!(self, LiveRunError::Harness(_))
    }
}

/// The signals that end a live run early, with its clean-up: Ctrl-C, what
/// `timeout`, CI cancellation and systemd send, and a closed terminal.
struct Interruptions {
    signals: Vec<(Signal, &'static str)>,
}

impl Interruptions {
    /// Installs the handlers (from now on these signals no longer kill
    /// the process: they end the run). Needs a tokio runtime.
    fn install() -> std::io::Result<Interruptions> {
        let kinds = [
            (SignalKind::interrupt(), "SIGINT"),
            (SignalKind::terminate(), "SIGTERM"),
            (SignalKind::hangup(), "SIGHUP"),
        ];
        let mut signals = Vec::new();
        for (kind, name) in kinds {
            signals.push((signal(kind)?, name));
        }
        Ok(Interruptions { signals })
    }

    /// Resolves with the name of the next signal received.
    async fn next(&mut self) -> &'static str {
        std::future::poll_fn(|cx| {
            for (signal, name) in &mut self.signals {
                if signal.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*name);
                }
            }
            std::task::Poll::Pending
        })
        .await
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
    let descriptors = ensure_descriptors(scenario.raw.clients)?;
    let version = check_server(&options.addr)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| LiveRunError::Setup(format!("no tokio runtime: {error}")))?;
    runtime.block_on(async {
        let mut interruptions = Interruptions::install()
            .map_err(|error| LiveRunError::Setup(format!("no signal handlers: {error}")))?;
        let session_timeout_ms = scenario.raw.timing.session_timeout_ms;
        let mut admin = LiveSession::connect(&options.addr, session_timeout_ms)
            .await
            .map_err(|error| LiveRunError::Setup(error.to_string()))?;
        create_root(&mut admin, &root).await?;
        let backend = Arc::new(ZkBackend::new(&options.addr, session_timeout_ms));
        let runner: Box<dyn LiveRunner> = match rooted.variant().async_workload() {
            Some(workload) => Box::new(AsyncRunner::new(&rooted, workload.clone(), backend.clone())),
            None => rooted.live_runner(),
        };
        let started = Instant::now();
        // Its own task: a panic in the run ends the task, not this
        // function, so the root is removed whatever happened.
        let (seed, run_root, run_backend) = (options.seed, root.clone(), backend.clone());
        let mut task = tokio::spawn(async move { runner.run(seed, &run_root, run_backend).await });
        let outcome = tokio::select! {
            finished = &mut task => Ok(finished),
            signal = interruptions.next() => {
                task.abort();
                let _ = (&mut task).await;
                Err(signal)
            }
        };
        let wall = started.elapsed();
        backend.close().await;
        let removed = tokio::select! {
            removed = remove_run_root(&mut admin, &root) => removed,
            signal = interruptions.next() => Err(format!(
                "{signal} during the removal: abandoned (it is stale once this process is gone; `zkcheck live --list-stale --zk {}` names it with the command that removes it)",
                options.addr
            )),
        };
        let _ = admin.close().await;
        if let Err(reason) = removed {
            return Err(LiveRunError::Cleanup { root, reason });
        }
        let harness_failure = backend.local_failure();
        match outcome {
            Err(signal) => Err(LiveRunError::Interrupted { root, signal }),
            Ok(_) if harness_failure.is_some() => Err(LiveRunError::Harness(
                harness_failure.expect("checked"),
            )),
            Ok(Err(panicked)) => Err(LiveRunError::Harness(format!(
                "the driver failed: {panicked}"
            ))),
            Ok(Ok(Err(error))) => Err(LiveRunError::Run(error.to_string())),
            Ok(Ok(Ok(report))) => Ok(LiveRun {
                report,
                version,
                root,
                wall,
                descriptors,
            }),
        }
    })
}

/// Creates the run's root with its owner payload, and its marker (see
/// [`crate::stale`]), in one multi; an existing root is refused untouched.
async fn create_root(admin: &mut LiveSession, root: &Path) -> Result<(), LiveRunError> {
    let created = admin
        .apply(&create_root_request(root, &RootOwner::this_process()))
        .await;
    let refused = match created {
        Ok(_) => return Ok(()),
        Err(ZkError::MultiFailed { error, .. }) if *error == ZkError::NodeExists => {
            LiveRunError::RootExists { root: root.clone() }
        }
        Err(error) => LiveRunError::Setup(format!("creating {root}: {error:?}")),
    };
    let _ = admin.close().await;
    Err(refused)
}

/// Removes the run's root, then its marker (in that order: the root is
/// never without its marker while this run lives).
async fn remove_run_root(admin: &mut LiveSession, root: &Path) -> Result<(), String> {
    remove_tree(admin, root).await?;
    let marker = marker_of(root);
    let deleted = admin
        .apply(&Request::Delete {
            path: marker.clone(),
            version: zk_recipes::zk::ANY_VERSION,
        })
        .await;
    match deleted {
        Ok(_) | Err(ZkError::NoNode) => Ok(()),
        Err(error) => Err(format!("deleting {marker}: {error:?}")),
    }
}
