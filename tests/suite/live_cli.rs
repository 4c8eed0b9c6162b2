//! `zkcheck live` on the binary. The bad-setup tests need no server: each
//! one shows the run is refused with exit 2, a clear message and before
//! anything is written (an unsupported fault is refused even with an
//! address nothing answers at, so the server is never contacted).
//!
//! The `#[ignore]`d tests need a real ZooKeeper 3.8 at `ZK_ADDR` (default
//! 127.0.0.1:2181): `scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::`.
//! They check that a fixed lock holds, that the original lock's ordering
//! bug shows live, that an existing root is refused untouched, and that
//! every run leaves the server as it found it; that SIGTERM and SIGHUP
//! clean up like Ctrl-C; that a root a SIGKILLed run left is named by the
//! next run with a command that removes it; that a raised soft open-file
//! limit lets a run go through; that with the client-side expiry policy
//! clients give up on their sessions after a long outage, open new ones,
//! and the fixed Curator-style lock holds; that silent connections run on a
//! sans-IO recipe (the short one unnoticed, the long one expiring its
//! session, a new one opened) and the fixed lock holds.
//!
//! Open-file limits (no server needed): a hard limit below what the run
//! needs is refused at once with the number needed; a soft one below it is
//! raised to the hard one.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use zk_recipes::zk::Acls;

fn zkcheck(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .output()
        .expect("zkcheck runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr.to_string()
}

/// A server that answers every connection with `answer` and closes it.
fn fake_server(answer: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut word = [0u8; 4];
            let _ = stream.read_exact(&mut word);
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    addr
}

#[test]
fn a_fault_the_real_world_cannot_inject_is_refused_by_its_key() {
    let zk = closed_port();
    let output = zkcheck(&[
        "live",
        "scenarios/lock-fixed-watch-faults.toml",
        "--zk",
        &zk,
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("faults.rates.spurious_watches_per_s"),
        "names the key: {message}"
    );
}

#[test]
fn an_ensemble_scenario_is_refused() {
    let zk = closed_port();
    let output = zkcheck(&[
        "live",
        "scenarios/ensemble/lock-fixed-ensemble.toml",
        "--zk",
        &zk,
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("ensemble"), "{}", stderr(&output));
}

#[test]
fn an_unreachable_address_is_refused_quickly() {
    let zk = closed_port();
    let started = Instant::now();
    let output = zkcheck(&["live", "scenarios/lock-fixed.toml", "--zk", &zk]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no server answers"),
        "{}",
        stderr(&output)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_malformed_address_is_refused() {
    let output = zkcheck(&["live", "scenarios/lock-fixed.toml", "--zk", "nowhere"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not a HOST:PORT address"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_server_that_is_not_zookeeper_is_refused() {
    let zk = fake_server("HTTP/1.1 400 Bad Request\r\n\r\n");
    let output = zkcheck(&["live", "scenarios/lock-fixed.toml", "--zk", &zk]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("does not answer `srvr` like ZooKeeper"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_zookeeper_that_is_not_3x_is_refused() {
    let zk =
        fake_server("Zookeeper version: 4.0.0-future, built on 2030-01-01\nMode: standalone\n");
    let output = zkcheck(&["live", "scenarios/lock-fixed.toml", "--zk", &zk]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("runs ZooKeeper 4.0.0-future; zkcheck live needs 3.x"),
        "{}",
        stderr(&output)
    );
}

/// `zkcheck ARGS` under the open-file limits `ulimit_flags` sets (dash's
/// `ulimit`: `-n N` sets both limits, `-S`/`-H` one), waited for at most
/// `patience` (then killed: a hang fails the test instead of blocking it).
fn zkcheck_limited(ulimit_flags: &str, args: &[&str], patience: Duration) -> Output {
    let script = format!("{ulimit_flags} && exec \"$0\" \"$@\"");
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_zkcheck"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    wait_bounded(child, patience)
}

/// Waits for `child` at most `patience`; kills it and fails past that.
fn wait_bounded(mut child: Child, patience: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > patience {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "zkcheck still ran after {patience:?}: {}{}",
                stdout(&output),
                stderr(&output)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_hard_open_file_limit_below_the_need_is_refused_with_the_number() {
    let zk = closed_port();
    // lock-fixed: 5 clients, about 48 + 6 x 5 = 78 descriptors.
    let output = zkcheck_limited(
        "ulimit -n 64",
        &["live", "scenarios/lock-fixed.toml", "--zk", &zk],
        Duration::from_secs(10),
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "needs about 78 file descriptors, the hard limit is 64; raise it with `ulimit -n 78`"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_soft_open_file_limit_below_the_need_is_raised_to_the_hard_one() {
    // Past the limits, the run goes on to its next check: the address.
    let zk = closed_port();
    let output = zkcheck_limited(
        "ulimit -S -n 64 && ulimit -H -n 200",
        &["live", "scenarios/lock-fixed.toml", "--zk", &zk],
        Duration::from_secs(10),
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no server answers"),
        "not refused for descriptors: {}",
        stderr(&output)
    );
}

#[test]
fn a_bad_root_is_refused() {
    let zk = closed_port();
    for root in ["/", "relative", "/zookeeper/x"] {
        let output = zkcheck(&[
            "live",
            "scenarios/lock-fixed.toml",
            "--zk",
            &zk,
            "--root",
            root,
        ]);
        assert_eq!(output.status.code(), Some(2), "{root}: {}", stderr(&output));
        assert!(stderr(&output).contains("--root"), "{}", stderr(&output));
    }
}

// ---- with a real server ----

/// The real-server tests compare the server's node count before and after:
/// they run one at a time (with live_async's too).
fn server_to_myself() -> std::sync::MutexGuard<'static, ()> {
    crate::common::real_server_to_myself()
}

fn zk_addr() -> String {
    std::env::var("ZK_ADDR").unwrap_or_else(|_| "127.0.0.1:2181".to_string())
}

/// The server's node count (`srvr`), to check a run left nothing behind.
fn node_count(addr: &str) -> u64 {
    let answer = zk_live::admin::four_letter_word(addr, "srvr").unwrap_or_else(|error| {
        panic!("no ZooKeeper at {addr} ({error}): scripts/zk-server start")
    });
    answer
        .lines()
        .find_map(|line| line.strip_prefix("Node count: "))
        .and_then(|count| count.trim().parse().ok())
        .expect("srvr reports a node count")
}

/// A short scenario file: `recipe`/`variant`, five clients, no faults.
fn quiet_scenario(name: &str, variant: &str, check: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zkcheck-live-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            "description = \"{name}\"\nrecipe = \"lock\"\nvariant = \"{variant}\"\nclients = 5\n\
             duration_ms = 10000\nheal_ms = 10000\nexpect = \"pass\"\n[config]\npath = \"/locks\"\n\
             parents = [\"/locks\"]\n[workload]\ncycles = 10\nhold_ms = [1, 5]\nthink_ms = [0, 5]\n\
             [properties]\ncheck = [{check}]\n"
        ),
    )
    .unwrap();
    file
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn the_fixed_lock_holds_live_with_real_faults_and_leaves_nothing() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let before = node_count(&addr);
    let output = zkcheck(&[
        "live",
        "scenarios/lock-fixed.toml",
        "--zk",
        &addr,
        "--seed",
        "3",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(stdout(&output).contains("pass: fenced_mutual_exclusion, fifo, liveness, no_leaks"));
    assert!(stdout(&output).contains("faults injected"));
    assert_eq!(node_count(&addr), before, "the run left nodes behind");
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn the_original_lock_breaks_fifo_live_and_says_how_to_rerun() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let before = node_count(&addr);
    let file = quiet_scenario("original", "original", "\"fifo\", \"liveness\"");
    let file = file.to_str().unwrap();
    let mut fifo = false;
    for seed in 0..5 {
        let seed = seed.to_string();
        let output = zkcheck(&["live", file, "--zk", &addr, "--seed", &seed]);
        if output.status.code() == Some(1) {
            let text = stdout(&output);
            assert!(text.contains("VIOLATION of fifo"), "{text}");
            assert!(
                text.contains(&format!("live {file} --zk {addr} --seed {seed}")),
                "{text}"
            );
            assert!(
                text.contains(&format!("sim {file} --seed {seed}")),
                "{text}"
            );
            fifo = true;
            break;
        }
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    assert!(fifo, "prefix ordering breaks FIFO on a real server too");
    assert_eq!(node_count(&addr), before, "the run left nodes behind");
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn an_existing_root_is_refused_and_left_untouched() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let root = format!("/zkcheck-live-cli-existing-{}", std::process::id());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let path = zk_recipes::zk::Path::new(root.clone()).unwrap();
    let child = path.child("keep").unwrap();
    runtime.block_on(async {
        let mut session = zk_live::LiveSession::connect(&addr, 4_000).await.unwrap();
        for node in [&path, &child] {
            let create = zk_recipes::zk::Request::Create {
                path: node.clone(),
                data: b"mine".to_vec(),
                mode: zk_recipes::zk::CreateMode::Persistent,
                acl: Acls::Open,
            };
            session.apply(&create).await.unwrap();
        }
        session.close().await.unwrap();
    });
    let before = node_count(&addr);
    let file = quiet_scenario("existing", "fixed", "\"liveness\"");
    let output = zkcheck(&[
        "live",
        file.to_str().unwrap(),
        "--zk",
        &addr,
        "--root",
        &root,
    ]);
    let after = node_count(&addr);
    runtime.block_on(async {
        let mut session = zk_live::LiveSession::connect(&addr, 4_000).await.unwrap();
        for node in [&child, &path] {
            let delete = zk_recipes::zk::Request::Delete {
                path: node.clone(),
                version: zk_recipes::zk::ANY_VERSION,
            };
            session.apply(&delete).await.unwrap();
        }
        session.close().await.unwrap();
    });
    // Checked after the clean-up, so a failure leaves nothing behind.
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("already exists"),
        "{}",
        stderr(&output)
    );
    assert_eq!(after, before, "nothing written, nothing removed");
}

/// Whether `path` exists on the server at `addr`.
fn exists_on_server(addr: &str, path: &str) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut session = zk_live::LiveSession::connect(addr, 4_000).await.unwrap();
        let exists = zk_recipes::zk::Request::Exists {
            path: zk_recipes::zk::Path::new(path.to_string()).unwrap(),
            watch: false,
        };
        let reply = session.apply(&exists).await;
        session.close().await.unwrap();
        matches!(reply, Ok(zk_recipes::zk::Reply::Exists(Some(_))))
    })
}

/// Starts `zkcheck live scenarios/lock-fixed.toml` (its faults, 5 clients,
/// ~20 s) with `extra` flags and waits until its root `root` exists.
fn start_live_run(addr: &str, seed: &str, root: &str, extra: &[&str]) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args([
            "live",
            "scenarios/lock-fixed.toml",
            "--zk",
            addr,
            "--seed",
            seed,
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkcheck runs");
    let started = Instant::now();
    while !exists_on_server(addr, root) {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the run never created {root}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Into the run proper (clients connected, faults striking).
    std::thread::sleep(Duration::from_millis(1_500));
    child
}

fn send_signal(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn sigterm_and_sighup_clean_up_like_ctrl_c() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let before = node_count(&addr);
    for signal in ["TERM", "HUP", "INT"] {
        let root = format!("/zkcheck-live-cli-{signal}-{}", std::process::id());
        let child = start_live_run(&addr, "2", &root, &["--root", &root]);
        send_signal(&child, signal);
        let output = wait_bounded(child, Duration::from_secs(15));
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!(
                "interrupted by SIG{signal}; the run's root `{root}` was removed"
            )),
            "{}",
            stderr(&output)
        );
        assert!(!exists_on_server(&addr, &root), "{root} left behind");
        assert!(!exists_on_server(&addr, &format!("{root}.running")));
    }
    assert_eq!(node_count(&addr), before, "the runs left nodes behind");
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn a_root_a_killed_run_left_is_named_with_a_command_that_removes_it() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let before = node_count(&addr);
    let seed = "77";
    // The default root: the killed run's seed and pid.
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkcheck"))
        .args([
            "live",
            "scenarios/lock-fixed.toml",
            "--zk",
            &addr,
            "--seed",
            seed,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let root = format!("/zkcheck-live-{seed}-{}", child.id());
    let started = Instant::now();
    while !exists_on_server(&addr, &root) {
        assert!(started.elapsed() < Duration::from_secs(15), "no {root}");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1_000));
    child.kill().unwrap(); // SIGKILL: no clean-up
    child.wait().unwrap();
    assert!(exists_on_server(&addr, &root), "SIGKILL leaves the root");
    // Stale once the killed run's session expired (lock-fixed: 4 s).
    let started = Instant::now();
    loop {
        let listed = zkcheck(&["live", "--list-stale", "--zk", &addr]);
        if stdout(&listed).contains(&root) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never listed as stale: {}",
            stdout(&listed)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // The next run names it, with the command that removes it.
    let file = quiet_scenario("after-kill", "fixed", "\"liveness\"");
    let next = zkcheck(&["live", file.to_str().unwrap(), "--zk", &addr]);
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    let text = stdout(&next);
    assert!(text.contains(&format!("  {root} (pid ")), "{text}");
    let command = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("remove with: "))
        .unwrap_or_else(|| panic!("no removal command: {text}"));
    assert!(
        command.contains(&format!("--remove-stale {root}")),
        "{command}"
    );
    // The command as printed, pasted into a shell.
    let removed = Command::new("sh").arg("-c").arg(command).output().unwrap();
    assert_eq!(removed.status.code(), Some(0), "{}", stderr(&removed));
    assert!(stdout(&removed).contains(&format!("removed stale root {root}")));
    assert!(!exists_on_server(&addr, &root));
    assert_eq!(node_count(&addr), before, "the killed run's nodes remain");
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn a_live_runs_root_is_never_removed_as_stale() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let root = format!("/zkcheck-live-cli-alive-{}", std::process::id());
    let child = start_live_run(&addr, "5", &root, &["--root", &root]);
    let refused = zkcheck(&["live", "--zk", &addr, "--remove-stale", &root]);
    send_signal(&child, "TERM");
    let output = wait_bounded(child, Duration::from_secs(15));
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("belongs to a live run that still runs"),
        "{}",
        stderr(&refused)
    );
    assert!(stderr(&output).contains("interrupted by SIGTERM"));
    assert!(!exists_on_server(&addr, &root));
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn a_run_under_a_low_soft_open_file_limit_raises_it_and_passes() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let file = quiet_scenario("low-soft-limit", "fixed", "\"liveness\"");
    let output = zkcheck_limited(
        "ulimit -S -n 64 && ulimit -H -n 200",
        &["live", file.to_str().unwrap(), "--zk", &addr],
        Duration::from_secs(60),
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(
        stdout(&output).contains("the soft limit was raised from 64 to 200 (about 78 needed)"),
        "{}",
        stdout(&output)
    );
    assert!(stdout(&output).contains("5 of 5 workloads done"));
}

/// Two clients of the fixed Curator-style lock lose their connection for
/// longer than the session timeout, with the client-side expiry policy.
const CLIENT_EXPIRY_FIXTURE: &str = "tests/fixtures/curator_lock-fixed-client-expiry-live.toml";

/// The session id at the end of a trace line's `session 0x...` words.
fn session_in(text: &str) -> Option<String> {
    let (_, after) = text.split_once("session 0x")?;
    let hex: String = after.chars().take_while(char::is_ascii_hexdigit).collect();
    Some(hex)
}

/// One client's session changes in a live run's trace, in order, each
/// with its time (ms since the run started).
fn session_lines(report: &zk_sim::world::RunReport, client: usize) -> Vec<(f64, String)> {
    report
        .trace
        .lines
        .iter()
        .filter(|line| line.client == Some(client))
        .map(|line| (line.at_ns as f64 / 1e6, line.text.clone()))
        .collect()
}

/// The time (ms) and outage (ms) of `client`'s disconnect in the run.
fn disconnect_of(report: &zk_sim::world::RunReport, client: usize) -> (f64, f64) {
    use zk_sim::faults::{Fault, Trigger};
    report
        .fault_history
        .iter()
        .find_map(|scheduled| match (scheduled.trigger, &scheduled.fault) {
            (Trigger::AtMs(at_ms), Fault::Disconnect { down_ms }) if scheduled.client == client => {
                Some((at_ms, *down_ms as f64))
            }
            _ => None,
        })
        .unwrap_or_else(|| {
            panic!(
                "client {client} was not disconnected: {:?}",
                report.fault_history
            )
        })
}

/// `client`, disconnected for longer than the session timeout, gave up
/// on the session it opened first a session timeout after the disconnect
/// (while the outage lasted), then opened another once the outage ended.
fn assert_gave_up_and_reopened(report: &zk_sim::world::RunReport, client: usize, timeout_ms: f64) {
    let lines = session_lines(report, client);
    let (cut_ms, down_ms) = disconnect_of(report, client);
    let gave_up = lines
        .iter()
        .position(|(_, text)| text.starts_with("gives up on session"))
        .unwrap_or_else(|| panic!("client {client} never gave up: {lines:?}"));
    let first = lines
        .iter()
        .find(|(_, text)| text.starts_with("opens session"))
        .and_then(|(_, text)| session_in(text));
    let (gave_up_ms, gave_up_text) = &lines[gave_up];
    assert_eq!(session_in(gave_up_text), first, "{lines:?}");
    assert!(
        *gave_up_ms >= cut_ms + timeout_ms && *gave_up_ms < cut_ms + down_ms,
        "client {client} gave up at {gave_up_ms} ms, cut at {cut_ms} ms: {lines:?}"
    );
    let reopened = lines[gave_up..]
        .iter()
        .find(|(_, text)| text.starts_with("opens session"));
    let Some((reopened_ms, reopened_text)) = reopened else {
        panic!("client {client} opened no new session after giving up: {lines:?}");
    };
    assert_ne!(session_in(reopened_text), first, "{lines:?}");
    assert!(
        *reopened_ms >= cut_ms + down_ms,
        "client {client} opened a new session during its outage: {lines:?}"
    );
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn clients_give_up_on_their_sessions_after_long_outages_and_the_fixed_lock_holds() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let before = node_count(&addr);
    let output = zkcheck(&["live", CLIENT_EXPIRY_FIXTURE, "--zk", &addr, "--seed", "1"]);
    let printed = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains("pass: mutual_exclusion, fenced_mutual_exclusion, liveness, no_leaks"),
        "{printed}"
    );
    assert_eq!(printed.matches("fault: ").count(), 2, "{printed}");
    assert!(printed.contains("3 of 3 workloads done"), "{printed}");
    // The summary names each session given up; the same run through the
    // library keeps every session change in its report's trace.
    assert_eq!(
        printed.matches("gives up on session 0x").count(),
        2,
        "{printed}"
    );
    let (scenario, live) = run_library_live(CLIENT_EXPIRY_FIXTURE, &addr);
    assert!(live.report.passed(), "{:?}", live.report.violations);
    let timeout_ms = scenario.raw.timing.session_timeout_ms as f64;
    assert_gave_up_and_reopened(&live.report, 0, timeout_ms);
    assert_gave_up_and_reopened(&live.report, 1, timeout_ms);
    let untouched = session_lines(&live.report, 2);
    assert!(
        !untouched.iter().any(|(_, text)| text.contains("gives up")),
        "client 2 kept its connection: {untouched:?}"
    );
    assert_eq!(node_count(&addr), before, "the runs left nodes behind");
}

/// `fixture` run live at seed 1 through the library (its report keeps the
/// trace the command line summarizes): the scenario and the run.
fn run_library_live(fixture: &str, addr: &str) -> (zk_sim::scenario::Scenario, zk_live::LiveRun) {
    let registry = zkcheck::Registry::builtin();
    let file = std::path::Path::new(fixture);
    let scenario = zk_sim::scenario::Scenario::load(file, registry.sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let options = zk_live::LiveOptions {
        addr: addr.to_string(),
        seed: 1,
        root: None,
    };
    let live = zk_live::run_live(&scenario, &options).unwrap_or_else(|error| panic!("{error}"));
    (scenario, live)
}

/// A sans-IO lock with a short and a long silent connection.
const SILENT_FIXTURE: &str = "tests/fixtures/lock-fixed-silent-live.toml";

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_cli::"]
fn silent_connections_run_live_on_a_sans_io_recipe_and_the_long_one_expires_its_session() {
    let _server = server_to_myself();
    let addr = zk_addr();
    let before = node_count(&addr);
    let output = zkcheck(&["live", SILENT_FIXTURE, "--zk", &addr, "--seed", "1"]);
    let printed = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains("pass: fenced_mutual_exclusion, liveness, no_leaks"),
        "{printed}"
    );
    assert_eq!(
        printed.matches("connection goes silent for").count(),
        2,
        "{printed}"
    );
    // The same run through the library: its trace has the session changes.
    let (_, live) = run_library_live(SILENT_FIXTURE, &addr);
    assert!(live.report.passed(), "{:?}", live.report.violations);
    // Client 0's silence (500 ms) stayed below its read timeout: one session.
    let short = session_lines(&live.report, 0);
    assert_eq!(short.len(), 1, "client 0 kept its session: {short:?}");
    // Client 1's (3,500 ms) outlasted its 2 s session: expired, then a new one.
    let long = session_lines(&live.report, 1);
    let expired = long
        .iter()
        .position(|(_, text)| text.ends_with("expired"))
        .unwrap_or_else(|| panic!("client 1's session did not expire: {long:?}"));
    let (expired_ms, _) = long[expired];
    assert!(
        (3_500.0..5_500.0).contains(&expired_ms),
        "expired {expired_ms} ms into the run, silent from 1,500 ms: {long:?}"
    );
    assert!(
        long[expired..]
            .iter()
            .any(|(_, text)| text.starts_with("opens session")),
        "client 1 opened no new session: {long:?}"
    );
    assert_eq!(node_count(&addr), before, "the runs left nodes behind");
}
