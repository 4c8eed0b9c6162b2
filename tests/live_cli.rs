//! `zkcheck live` on the binary. The bad-setup tests need no server: each
//! one shows the run is refused with exit 2, a clear message and before
//! anything is written (an unsupported fault is refused even with an
//! address nothing answers at, so the server is never contacted).
//!
//! The `#[ignore]`d tests need a real ZooKeeper 3.8 at `ZK_ADDR` (default
//! 127.0.0.1:2181): `scripts/zk-server start; cargo test --test live_cli -- --ignored`.
//! They check that a fixed lock holds, that the original lock's ordering
//! bug shows live, that an existing root is refused untouched, and that
//! every run leaves the server as it found it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

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
/// they run one at a time.
static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn server_to_myself() -> std::sync::MutexGuard<'static, ()> {
    SERVER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --test live_cli -- --ignored"]
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
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --test live_cli -- --ignored"]
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
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --test live_cli -- --ignored"]
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
