//! Unit tests of the proxy against a stand-in echo server: frames flow, a
//! cut ends open connections, a hole swallows and a heal cuts the damaged;
//! and the helpers (echo servers, frames, round trips) the other test
//! modules share.

use super::frames::frame_xid;
use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A stand-in server: answers every frame after the first with a frame
/// carrying the same xid, and the first (the handshake) with a handshake.
pub(super) async fn echo_server() -> SocketAddr {
    logging_echo_server().await.0
}

/// [`echo_server`], also logging the xid of every frame it received
/// after a connection's first.
pub(super) async fn logging_echo_server() -> (SocketAddr, Arc<Mutex<Vec<i32>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let received = log.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let received = received.clone();
            tokio::spawn(async move {
                let (mut read, mut write) = stream.into_split();
                let mut index = 0;
                while let Ok(frame) = read_frame(&mut read).await {
                    if let Some(xid) = frame_xid(index, &frame) {
                        received.lock().unwrap().push(xid);
                    }
                    index += 1;
                    if write.write_all(&frame).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, log)
}

pub(super) fn frame(xid: i32) -> Vec<u8> {
    let mut frame = 8i32.to_be_bytes().to_vec();
    frame.extend(xid.to_be_bytes());
    frame.extend([0u8; 4]);
    frame
}

pub(super) async fn round_trip(stream: &mut TcpStream, xid: i32) -> io::Result<Vec<u8>> {
    stream.write_all(&frame(xid)).await?;
    let mut reply = vec![0u8; 12];
    stream.read_exact(&mut reply).await?;
    Ok(reply)
}

pub(super) async fn ends_cleanly(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await;
    matches!(read, Ok(Ok(0)))
}

pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn forwards_frames_and_cut_ends_open_connections_only() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        let mut old = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut old, 0).await.unwrap(), frame(0));
        assert_eq!(round_trip(&mut old, 7).await.unwrap(), frame(7));
        proxy.cut_all();
        assert!(
            ends_cleanly(&mut old).await,
            "a cut is a clean end of stream"
        );
        let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut new, 0).await.unwrap(), frame(0));
        assert_eq!(round_trip(&mut new, 8).await.unwrap(), frame(8));
        assert_eq!(proxy.swallowed(), Swallowed::default());
    });
}

#[test]
fn a_hole_to_the_client_swallows_replies_and_heal_cuts_the_damaged() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        let mut damaged = TcpStream::connect(proxy.addr()).await.unwrap();
        round_trip(&mut damaged, 0).await.unwrap();
        proxy.black_hole(Hole::ToClient);
        damaged.write_all(&frame(5)).await.unwrap();
        damaged.write_all(&frame(-2)).await.unwrap();
        let swallowed = proxy
            .wait_swallowed(
                |s| s.replies == 1 && s.other_frames == 1,
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        assert_eq!(swallowed.requests, 0, "requests went through");
        proxy.heal();
        assert!(
            ends_cleanly(&mut damaged).await,
            "healing cuts a damaged connection"
        );
        let mut fresh = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut fresh, 0).await.unwrap(), frame(0));
        assert_eq!(round_trip(&mut fresh, 9).await.unwrap(), frame(9));
    });
}

#[test]
fn a_full_hole_swallows_requests_and_spares_undamaged_connections() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        let mut idle = TcpStream::connect(proxy.addr()).await.unwrap();
        round_trip(&mut idle, 0).await.unwrap();
        let mut busy = TcpStream::connect(proxy.addr()).await.unwrap();
        round_trip(&mut busy, 0).await.unwrap();
        proxy.black_hole(Hole::Both);
        busy.write_all(&frame(3)).await.unwrap();
        proxy
            .wait_swallowed(|s| s.requests == 1, Duration::from_secs(5))
            .await
            .unwrap();
        proxy.heal();
        assert!(ends_cleanly(&mut busy).await);
        assert_eq!(round_trip(&mut idle, 4).await.unwrap(), frame(4));
        assert_eq!(proxy.hole(), Hole::None);
    });
}
