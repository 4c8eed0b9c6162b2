//! A test that needs real I/O: the latch on a real ZooKeeper (`ZK_ADDR`,
//! default 127.0.0.1:2181) through a TCP relay the test cuts.
//!
//! It is compiled only without `--cfg madsim`, where `zookeeper-client`
//! and `tokio` are the real crates (in the simulating build they are
//! simulated and there is no real server to reach), and it is ignored
//! unless asked for, from the live build:
//!
//! ```sh
//! scripts/zk-server start
//! RUSTFLAGS="" cargo test --target-dir target/live -- --ignored
//! ```
//!
//! The relay uses `std::net` and threads, so the crate needs no tokio
//! feature of its own for it (docs/async-recipe.md, "Tests that need real
//! I/O").
#![cfg(not(madsim))]

use async_latch::latch::LeaderLatch;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zookeeper_client::{Acls, Client, CreateMode};

/// A relay from a local port to the server: every connection it accepts
/// is carried to the server until [`Relay::cut`] shuts it.
struct Relay {
    addr: String,
    carried: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(server: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        let addr = listener.local_addr().expect("its address").to_string();
        let carried = Arc::new(Mutex::new(Vec::new()));
        let (server, kept) = (server.to_string(), carried.clone());
        std::thread::spawn(move || {
            for inbound in listener.incoming().flatten() {
                let Ok(outbound) = TcpStream::connect(&server) else {
                    continue;
                };
                let clone = |stream: &TcpStream| stream.try_clone().expect("a socket's clone");
                kept.lock()
                    .unwrap()
                    .extend([clone(&inbound), clone(&outbound)]);
                pump(clone(&inbound), clone(&outbound));
                pump(outbound, inbound);
            }
        });
        Relay { addr, carried }
    }

    /// Shuts every connection carried so far; new ones are still accepted
    /// (the client reconnects through the relay, to the same session).
    fn cut(&self) {
        for stream in self.carried.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// Copies one direction of a connection until either side ends.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Both);
    });
}

#[tokio::test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start (ZK_ADDR moves it)"]
async fn a_cut_leader_steps_down_and_its_successor_leads_with_a_higher_token() {
    let server = std::env::var("ZK_ADDR").unwrap_or_else(|_| "127.0.0.1:2181".to_string());
    let relay = Relay::start(&server);
    let dir = format!("/async-latch-live-{}", std::process::id());
    let leader_client = Client::connect(&relay.addr).await.expect("a session");
    let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
    leader_client
        .create(&dir, b"", &options)
        .await
        .expect("the latch's directory");

    let mut leader = LeaderLatch::new(leader_client, &dir, "a", false);
    let token = leader.acquire().await.expect("the first candidate leads");
    let successor_client = Client::connect(&server).await.expect("a session");
    let successor = tokio::spawn(async move {
        let mut successor = LeaderLatch::new(successor_client, &dir, "b", false);
        let token = successor.acquire().await;
        (successor, token, dir)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!successor.is_finished(), "two leaders at once");

    relay.cut();
    tokio::time::timeout(Duration::from_secs(5), leader.suspended())
        .await
        .expect("the leader hears its connection cut (Disconnected) within 5 s");
    leader
        .release()
        .await
        .expect("the leader steps down once reconnected");

    let (mut successor, successor_token, dir) =
        tokio::time::timeout(Duration::from_secs(10), successor)
            .await
            .expect("the successor leads within 10 s of the step-down")
            .expect("the successor's task");
    let successor_token = successor_token.expect("the successor leads");
    assert!(
        successor_token > token,
        "fencing tokens grow: {successor_token} after {token}"
    );
    successor.release().await.expect("the successor steps down");
    let cleaner = Client::connect(&server).await.expect("a session");
    cleaner
        .delete(&dir, None)
        .await
        .expect("the directory, empty again");
}
