//! The ensemble the tests in `ensemble.rs` run against: its members'
//! addresses (`ZK_ENSEMBLE_ADDRS`), their modes and zxids read with
//! four-letter commands, stopping and restarting one member through
//! `scripts/zk-server stop-member / start-member`, and bounded polling.
//!
//! Every wait here polls what a server or client reports, with a deadline
//! after which the test fails saying what it waited for.
//!
//! Faults on the members themselves: freezing one (SIGSTOP,
//! `scripts/zk-server pause-member`) and restarting a follower whose link to
//! the leader runs through [`link_proxy::LinkProxy`]s the test controls
//! (`start-member --proxied-quorum`, [`Ensemble::start_member_proxied`]).

pub mod link_proxy;
pub mod member_faults;

use std::future::Future;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;
use zk_live::admin;
use zookeeper_client as zkc;

/// The command that runs these tests.
pub const HOW_TO_RUN: &str = "scripts/zk-server start --ensemble 3; \
     cargo test --release --workspace --test real_server -- --ignored ensemble::; scripts/zk-server stop --ensemble 3";

/// Where `scripts/zk-server start --ensemble 3` puts the members by default.
pub const DEFAULT_ENSEMBLE_ADDRS: &str = "127.0.0.1:2191,127.0.0.1:2192,127.0.0.1:2193";

/// How long an ensemble may take to have a leader with every member serving
/// (elections, a restarted member's sync).
pub const ENSEMBLE_DEADLINE: Duration = Duration::from_secs(60);

const POLL: Duration = Duration::from_millis(20);

/// The tests stop and restart members: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The ensemble of one test, held exclusively while it lives.
pub struct Ensemble {
    pub addrs: Vec<String>,
    _exclusive: MutexGuard<'static, ()>,
}

impl Ensemble {
    /// The ensemble at `ZK_ENSEMBLE_ADDRS` (default [`DEFAULT_ENSEMBLE_ADDRS`]),
    /// made whole: members found stopped (by an earlier test that failed
    /// half-way) are restarted, then every member serves and one leads.
    /// Panics, saying how to start one, when no member answers.
    pub fn whole() -> Ensemble {
        let exclusive = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let list = std::env::var("ZK_ENSEMBLE_ADDRS")
            .unwrap_or_else(|_| DEFAULT_ENSEMBLE_ADDRS.to_string());
        let addrs: Vec<String> = list.split(',').map(|a| a.trim().to_string()).collect();
        assert!(
            addrs.len() >= 3,
            "ZK_ENSEMBLE_ADDRS={list}: these tests need an ensemble of at least 3 servers"
        );
        let ensemble = Ensemble {
            addrs,
            _exclusive: exclusive,
        };
        if ensemble
            .addrs
            .iter()
            .all(|addr| admin::four_letter_word(addr, "ruok").is_err())
        {
            panic!(
                "the ensemble tests did NOT run: no ZooKeeper answers at any of {list}.\n\
                 Start an ensemble and run them with\n  {HOW_TO_RUN}\n\
                 (ZK_ENSEMBLE_ADDRS points them at another one)"
            );
        }
        for member in 0..ensemble.addrs.len() {
            // A member left frozen by an earlier test that failed half-way.
            let _ = ensemble.try_zk_server(&["resume-member", &(member + 1).to_string()]);
        }
        for member in 0..ensemble.addrs.len() {
            match ensemble.mode(member).as_deref() {
                Some("leader" | "follower") => {}
                // Stopped, or running without serving (left behind proxies
                // that are gone): restarted on its own config.
                None => {
                    ensemble.stop_member(member);
                    ensemble.start_member(member);
                }
                // A copy of its data left serving alone.
                Some(_) => {
                    ensemble.stop_member(member);
                    ensemble.start_member(member);
                }
            }
        }
        ensemble.await_quorum();
        ensemble
    }

    pub fn size(&self) -> usize {
        self.addrs.len()
    }

    /// The member's mode (`leader`, `follower`, `read-only`), `None` while it
    /// does not serve clients or does not answer.
    pub fn mode(&self, member: usize) -> Option<String> {
        admin::server_mode(&self.addrs[member]).ok().flatten()
    }

    /// The last zxid the member applied (`srvr`).
    pub fn zxid(&self, member: usize) -> i64 {
        admin::server_zxid(&self.addrs[member])
            .unwrap_or_else(|error| panic!("srvr at {}: {error}", self.addrs[member]))
            .unwrap_or_else(|| panic!("member {member} does not serve"))
    }

    pub fn leader(&self) -> usize {
        (0..self.size())
            .find(|&m| self.mode(m).as_deref() == Some("leader"))
            .expect("the ensemble has a leader")
    }

    /// The members that follow, in member order.
    pub fn followers(&self) -> Vec<usize> {
        (0..self.size())
            .filter(|&m| self.mode(m).as_deref() == Some("follower"))
            .collect()
    }

    /// Waits until one member leads and every other follows.
    pub fn await_quorum(&self) {
        self.poll_blocking(
            "a leader with every member serving",
            ENSEMBLE_DEADLINE,
            || {
                let modes: Vec<Option<String>> = (0..self.size()).map(|m| self.mode(m)).collect();
                let leaders = modes
                    .iter()
                    .filter(|m| m.as_deref() == Some("leader"))
                    .count();
                let followers = modes
                    .iter()
                    .filter(|m| m.as_deref() == Some("follower"))
                    .count();
                (leaders == 1 && leaders + followers == self.size())
                    .then_some(())
                    .ok_or_else(|| format!("modes {modes:?}"))
            },
        );
    }

    /// Kills member `member` (`scripts/zk-server stop-member`); returns when
    /// it no longer answers.
    pub fn stop_member(&self, member: usize) {
        self.zk_server(&["stop-member", &(member + 1).to_string()]);
        assert!(
            admin::four_letter_word(&self.addrs[member], "ruok").is_err(),
            "member {} still answers at {} after stop-member: ZK_ENSEMBLE_ADDRS and the \
             script's ZK_ENSEMBLE_PORT / ZK_DIR disagree",
            member + 1,
            self.addrs[member]
        );
    }

    /// Restarts member `member` on its data (`scripts/zk-server
    /// start-member`); returns when it serves (as leader or follower).
    pub fn start_member(&self, member: usize) {
        self.zk_server(&["start-member", &(member + 1).to_string()]);
        assert!(
            self.mode(member).is_some(),
            "member {} does not serve at {} after start-member: ZK_ENSEMBLE_ADDRS and the \
             script's ZK_ENSEMBLE_PORT / ZK_DIR disagree",
            member + 1,
            self.addrs[member]
        );
    }

    /// Serves a copy of stopped member `member`'s data as a standalone
    /// server on its client port (`scripts/zk-server start-member --alone`):
    /// a server behind every write made since the member stopped.
    pub fn start_member_alone(&self, member: usize) {
        self.zk_server(&["start-member", &(member + 1).to_string(), "--alone"]);
        assert_eq!(self.mode(member).as_deref(), Some("standalone"));
    }

    /// Freezes member `member`'s server process (SIGSTOP,
    /// `scripts/zk-server pause-member`): its connections stay open, it
    /// answers nothing.
    pub fn pause_member(&self, member: usize) {
        self.zk_server(&["pause-member", &(member + 1).to_string()]);
    }

    /// Restarts stopped member `member` on its data with every other
    /// member's quorum port moved to [`Ensemble::quorum_proxy_port`]
    /// (`scripts/zk-server start-member --proxied-quorum`): it reaches the
    /// leader only through proxies the test runs there. Returns when it
    /// serves; the proxies must run before.
    pub fn start_member_proxied(&self, member: usize) {
        self.zk_server(&[
            "start-member",
            &(member + 1).to_string(),
            "--proxied-quorum",
        ]);
    }

    /// Member `member`'s quorum address (`host:port`, the client port + 100,
    /// as `scripts/zk-server` lays the members out).
    pub fn quorum_addr(&self, member: usize) -> String {
        let (host, port) = self.host_port(member);
        format!("{host}:{}", port + 100)
    }

    /// Where a proxy to member `member`'s quorum port listens for a member
    /// started with `--proxied-quorum` (the client port + 300).
    pub fn quorum_proxy_addr(&self, member: usize) -> String {
        let (host, port) = self.host_port(member);
        format!("{host}:{}", port + 300)
    }

    fn host_port(&self, member: usize) -> (&str, u16) {
        let addr = &self.addrs[member];
        addr.rsplit_once(':')
            .and_then(|(host, port)| Some((host, port.parse().ok()?)))
            .unwrap_or_else(|| panic!("ZK_ENSEMBLE_ADDRS: {addr} is not host:port"))
    }

    /// Member `member`'s server log, as `scripts/zk-server` writes it.
    pub fn log_of(&self, member: usize) -> String {
        let dir = match std::env::var("ZK_ENSEMBLE_DIR") {
            Ok(dir) => PathBuf::from(dir),
            Err(_) => std::env::var("ZK_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|_| repo_root().join(".zk"))
                .join("ensemble"),
        };
        let log = dir.join((member + 1).to_string()).join("server.log");
        std::fs::read_to_string(&log).unwrap_or_else(|error| {
            panic!(
                "cannot read member {}'s log {} ({error}); set ZK_ENSEMBLE_DIR to the \
                 directory scripts/zk-server used",
                member + 1,
                log.display()
            )
        })
    }

    fn zk_server(&self, args: &[&str]) {
        if let Err(error) = self.try_zk_server(args) {
            panic!("{error}");
        }
    }

    /// Runs `scripts/zk-server ARGS --ensemble N`; the error says what it
    /// printed. Never panics (it also runs from drop guards).
    pub fn try_zk_server(&self, args: &[&str]) -> Result<(), String> {
        let script = repo_root().join("scripts/zk-server");
        let size = self.size().to_string();
        let output = Command::new(&script)
            .args(args)
            .args(["--ensemble", &size])
            .output()
            .map_err(|error| format!("cannot run {}: {error}", script.display()))?;
        if output.status.success() {
            return Ok(());
        }
        Err(format!(
            "{} {} --ensemble {size} failed ({}):\n{}{}",
            script.display(),
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }

    /// Calls `probe` until it returns `Ok`, at most `within`; the `Err` says
    /// what was seen instead, for the failure message.
    pub fn poll_blocking<T>(
        &self,
        what: &str,
        within: Duration,
        mut probe: impl FnMut() -> Result<T, String>,
    ) -> T {
        let deadline = std::time::Instant::now() + within;
        loop {
            match probe() {
                Ok(value) => return value,
                Err(seen) if std::time::Instant::now() >= deadline => {
                    panic!("waited {within:?} for {what}; last seen: {seen}")
                }
                Err(_) => std::thread::sleep(POLL),
            }
        }
    }
}

/// Like [`Ensemble::poll_blocking`], for probes that talk to the servers
/// through a client.
pub async fn poll<T, F>(what: &str, within: Duration, mut probe: impl FnMut() -> F) -> T
where
    F: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + within;
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) if Instant::now() >= deadline => {
                panic!("waited {within:?} for {what}; last seen: {seen}")
            }
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("live/ is in the repository")
        .to_path_buf()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A fresh top-level path for one test of this run.
pub fn fresh_root(test: &str) -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("/ensemble-{test}-{millis}")
}

/// Opens a session at `addr` only (no other server to fall back on), or
/// panics naming the address.
pub async fn connect(addr: &str, session_timeout: Duration) -> zkc::Client {
    zkc::Client::connector()
        .with_session_timeout(session_timeout)
        .with_fail_eagerly()
        .connect(addr)
        .await
        .unwrap_or_else(|error| panic!("no session at {addr}: {error}"))
}

pub fn persistent() -> zkc::CreateOptions<'static> {
    zkc::CreateMode::Persistent.with_acls(zkc::Acls::anyone_all())
}

pub fn ephemeral() -> zkc::CreateOptions<'static> {
    zkc::CreateMode::Ephemeral.with_acls(zkc::Acls::anyone_all())
}

/// Waits until the client reports `state`, at most `within`.
pub async fn await_state(client: &zkc::Client, state: zkc::SessionState, within: Duration) {
    let mut watcher = client.state_watcher();
    let reached = async {
        while client.state() != state {
            let now = watcher.changed().await;
            if now == state {
                return;
            }
            if now.is_terminated() {
                panic!("the session ended in {now:?} while waiting for {state:?}");
            }
        }
    };
    tokio::time::timeout(within, reached)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the session did not reach {state:?} within {within:?} (it is {:?})",
                client.state()
            )
        });
}

/// The event a one-shot watch delivers, at most `within` from now.
pub async fn fired(watch: zkc::OneshotWatcher, what: &str, within: Duration) -> zkc::WatchedEvent {
    tokio::time::timeout(within, watch.changed())
        .await
        .unwrap_or_else(|_| panic!("{what}: no notification within {within:?}"))
}
