//! A byte-level TCP proxy for the links *between* ensemble members (a
//! follower's link to the leader's quorum port), where
//! `zk_live::proxy::FaultProxy` cannot go: it forwards ZooKeeper's client
//! frames, and the quorum protocol is not framed that way.
//!
//! `scripts/zk-server start-member I --proxied-quorum` restarts member I
//! with every other member's quorum port moved to a port where a
//! [`LinkProxy`] listens; the test then controls I's link to the leader:
//! - [`LinkProxy::cut_off`]: from now on nothing passes either way and is
//!   swallowed; connections stay open and new ones are accepted into the
//!   hole. Nobody is told: a network partition on loopback, without
//!   iptables. It lasts until the proxy is dropped.
//! - [`LinkProxy::delay_from_upstream`]: bytes from the upstream (the
//!   leader) are held that long before they are passed on, in order: a
//!   follower that lags behind the leader's commits.
//!
//! Runs on the ambient tokio runtime; dropping the proxy ends its listener
//! and every connection through it.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// What the proxy does to the bytes, as every connection sees it.
#[derive(Clone, Copy, Debug, Default)]
struct Faults {
    cut_off: bool,
    from_upstream_delay: Duration,
}

/// A proxy from a local port to one upstream address.
pub struct LinkProxy {
    faults: Arc<Mutex<Faults>>,
    accepting: JoinHandle<()>,
}

impl LinkProxy {
    /// Listens on `listen` (`host:port`) and forwards every connection to
    /// `upstream`.
    pub async fn start(listen: &str, upstream: &str) -> io::Result<LinkProxy> {
        let listener = TcpListener::bind(listen).await?;
        let faults = Arc::new(Mutex::new(Faults::default()));
        let accepting = tokio::spawn(accept_loop(
            listener,
            upstream.to_string(),
            Arc::clone(&faults),
        ));
        Ok(LinkProxy { faults, accepting })
    }

    /// Nothing passes any more, either way; connections stay open.
    pub fn cut_off(&self) {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cut_off = true;
    }

    /// Bytes from the upstream are passed on `delay` after they arrived.
    pub fn delay_from_upstream(&self, delay: Duration) {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .from_upstream_delay = delay;
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        // The accept loop owns every connection's tasks: they end with it.
        self.accepting.abort();
    }
}

async fn accept_loop(listener: TcpListener, upstream: String, faults: Arc<Mutex<Faults>>) {
    let mut links = JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        links.spawn(link(client, upstream.clone(), Arc::clone(&faults)));
        // Reap the links that ended.
        while links.try_join_next().is_some() {}
    }
}

/// One proxied connection: a pump each way; it ends when both did.
async fn link(client: TcpStream, upstream: String, faults: Arc<Mutex<Faults>>) {
    let Ok(server) = TcpStream::connect(&upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let to_upstream = pump(client_read, server_write, Arc::clone(&faults), false);
    let from_upstream = pump(server_read, client_write, faults, true);
    tokio::join!(to_upstream, from_upstream);
}

/// Copies `from` to `to`, swallowing what arrives while cut off and holding
/// back what comes from the upstream by the delay in force when it arrived.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    faults: Arc<Mutex<Faults>>,
    from_upstream: bool,
) {
    let (sender, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        while let Some((at, bytes)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let read = from.read(&mut buf).await;
            let now = *faults.lock().unwrap_or_else(|e| e.into_inner());
            let read = match read {
                // A side that closes behind the cut is not heard of either:
                // the other side's connection stays open, silent.
                Ok(0) | Err(_) if now.cut_off => std::future::pending().await,
                Ok(0) | Err(_) => return,
                Ok(read) => read,
            };
            if now.cut_off {
                continue;
            }
            let delay = if from_upstream {
                now.from_upstream_delay
            } else {
                Duration::ZERO
            };
            if sender
                .send((Instant::now() + delay, buf[..read].to_vec()))
                .is_err()
            {
                return;
            }
        }
    };
    tokio::join!(reader, writer);
}
