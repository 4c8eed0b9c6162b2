//! Unit tests of silences: frames held both ways and delivered at the end,
//! what a client sent on a connection it closed never arriving, and
//! overlapping silences.

use super::frames::frame_xid;
use super::tests::*;
use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A stand-in server that answers each frame `delay` after it arrived
/// (the handshake at once), logging every xid it received and counting
/// the connections it accepted.
async fn slow_echo_server(delay: Duration) -> (SocketAddr, Arc<Mutex<Vec<i32>>>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (log, accepted) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(AtomicUsize::new(0)),
    );
    let (received, count) = (log.clone(), accepted.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let received = received.clone();
            tokio::spawn(async move {
                let (mut read, mut write) = stream.into_split();
                let mut index = 0;
                while let Ok(frame) = read_frame(&mut read).await {
                    if let Some(xid) = frame_xid(index, &frame) {
                        received.lock().unwrap().push(xid);
                        tokio::time::sleep(delay).await;
                    }
                    index += 1;
                    if write.write_all(&frame).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, log, accepted)
}

/// Polls until `done`, at most 5 s.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// Reads one 12-byte echo within `patience`, if it comes.
async fn reply_within(stream: &mut TcpStream, patience: Duration) -> Option<Vec<u8>> {
    let mut reply = vec![0u8; 12];
    let read = tokio::time::timeout(patience, stream.read_exact(&mut reply)).await;
    matches!(read, Ok(Ok(_))).then_some(reply)
}

#[test]
fn a_silence_holds_frames_both_ways_keeps_the_connection_and_delivers_them_after() {
    runtime().block_on(async {
        let (server, received, accepted) = slow_echo_server(Duration::from_millis(100)).await;
        let proxy = FaultProxy::start(&server.to_string()).await.unwrap();
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut client, 0).await.unwrap(), frame(0));
        // A request that reached the server: its reply is held.
        client.write_all(&frame(1)).await.unwrap();
        assert!(eventually(|| received.lock().unwrap().contains(&1)).await);
        let silenced_at = tokio::time::Instant::now();
        proxy.silence_for(600);
        assert!(proxy.silent());
        // One sent into the silence does not reach the server.
        client.write_all(&frame(2)).await.unwrap();
        assert_eq!(
            reply_within(&mut client, Duration::from_millis(400)).await,
            None
        );
        assert_eq!(*received.lock().unwrap(), vec![1], "2 is held");
        assert_eq!(proxy.open_connections(), 1, "nothing was closed");
        assert_eq!(
            proxy.held(),
            HeldFrames {
                to_server: 1,
                to_client: 1
            }
        );
        // Then both arrive, in order, on the same connection.
        assert_eq!(
            reply_within(&mut client, Duration::from_secs(5)).await,
            Some(frame(1))
        );
        assert!(silenced_at.elapsed() >= Duration::from_millis(600));
        assert_eq!(
            reply_within(&mut client, Duration::from_secs(5)).await,
            Some(frame(2))
        );
        assert_eq!(round_trip(&mut client, 3).await.unwrap(), frame(3));
        assert_eq!(*received.lock().unwrap(), vec![1, 2, 3]);
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        assert_eq!(proxy.swallowed(), Swallowed::default(), "nothing was lost");
    });
}

#[test]
fn what_a_client_sent_on_a_connection_it_closed_in_the_silence_never_arrives() {
    runtime().block_on(async {
        let (server, received, accepted) = slow_echo_server(Duration::ZERO).await;
        let proxy = FaultProxy::start(&server.to_string()).await.unwrap();
        let mut old = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut old, 0).await.unwrap(), frame(0));
        proxy.silence_for(400);
        old.write_all(&frame(7)).await.unwrap();
        // An attempt opened in the silence and given up: never connected.
        let mut attempt = TcpStream::connect(proxy.addr()).await.unwrap();
        attempt.write_all(&frame(0)).await.unwrap();
        assert!(eventually(|| proxy.held().to_server == 2).await);
        drop((old, attempt));
        // One that waits is connected when the silence ends.
        let mut patient = TcpStream::connect(proxy.addr()).await.unwrap();
        patient.write_all(&frame(0)).await.unwrap();
        assert_eq!(
            reply_within(&mut patient, Duration::from_secs(5)).await,
            Some(frame(0))
        );
        assert_eq!(round_trip(&mut patient, 8).await.unwrap(), frame(8));
        assert_eq!(
            *received.lock().unwrap(),
            vec![8],
            "7 was lost with its connection"
        );
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "the given-up attempt never arrived"
        );
    });
}

#[test]
fn overlapping_silences_last_to_the_later_end_and_end_silence_ends_them() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        let started = tokio::time::Instant::now();
        proxy.silence_for(500);
        proxy.silence_for(200);
        assert!(eventually(|| !proxy.silent()).await);
        assert!(started.elapsed() >= Duration::from_millis(500));
        proxy.silence_for(10_000);
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        client.write_all(&frame(0)).await.unwrap();
        assert_eq!(
            reply_within(&mut client, Duration::from_millis(200)).await,
            None
        );
        proxy.end_silence();
        assert!(!proxy.silent());
        assert_eq!(
            reply_within(&mut client, Duration::from_secs(5)).await,
            Some(frame(0))
        );
        // A cut still ends a connection in a silence.
        proxy.silence_for(10_000);
        proxy.cut_all();
        assert!(ends_cleanly(&mut client).await);
    });
}
