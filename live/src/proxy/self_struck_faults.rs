//! Unit tests of the faults the proxy strikes by itself: requests numbered
//! for a hook that loses a request or its reply, `drop_for`, heal timers,
//! and the session sniffed from a connect response.

use super::tests::*;
use super::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// A hook that records the numbers it was asked about and loses
/// request `chosen` as `loss`.
fn hook_losing(chosen: u64, loss: RequestLoss) -> (RequestHook, Arc<Mutex<Vec<u64>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let hook: RequestHook = Arc::new(move |number| {
        log.lock().unwrap().push(number);
        (number == chosen).then_some(loss)
    });
    (hook, asked)
}

/// Polls until the hole is `hole`, at most `timeout`.
async fn wait_hole(proxy: &FaultProxy, hole: Hole, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    while proxy.hole() != hole {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

/// A connection whose handshake got through.
async fn connected(proxy: &FaultProxy) -> TcpStream {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(round_trip(&mut stream, 0).await.unwrap(), frame(0));
    stream
}

/// True if a new connection's handshake gets no answer within 200 ms.
async fn new_connections_hang(proxy: &FaultProxy) -> bool {
    let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
    let handshake = round_trip(&mut stream, 0);
    tokio::time::timeout(Duration::from_millis(200), handshake)
        .await
        .is_err()
}

#[test]
fn requests_are_numbered_over_reconnects_without_pings_or_handshakes() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        let (hook, asked) = hook_losing(u64::MAX, RequestLoss::BeforeApply { down_ms: 0 });
        proxy.set_request_hook(hook);
        let mut first = connected(&proxy).await;
        for xid in [1, -2, 2, -8, -4, 3] {
            assert_eq!(round_trip(&mut first, xid).await.unwrap(), frame(xid));
        }
        proxy.cut_all();
        assert!(ends_cleanly(&mut first).await);
        let mut second = connected(&proxy).await;
        assert_eq!(round_trip(&mut second, 4).await.unwrap(), frame(4));
        assert_eq!(*asked.lock().unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(proxy.requests_numbered(), 4);
        assert_eq!(proxy.losses_struck(), 0);
    });
}

#[test]
fn before_apply_swallows_the_chosen_request_cuts_and_heals_after_down_ms() {
    runtime().block_on(async {
        let (server, received) = logging_echo_server().await;
        let proxy = FaultProxy::start(&server.to_string()).await.unwrap();
        let (hook, _) = hook_losing(2, RequestLoss::BeforeApply { down_ms: 600 });
        proxy.set_request_hook(hook);
        let mut client = connected(&proxy).await;
        assert_eq!(round_trip(&mut client, 5).await.unwrap(), frame(5));
        let struck_at = tokio::time::Instant::now();
        client.write_all(&frame(6)).await.unwrap();
        assert!(ends_cleanly(&mut client).await, "the loss cuts the link");
        assert_eq!(proxy.losses_struck(), 1);
        assert_eq!(proxy.swallowed().requests, 1);
        assert_eq!(proxy.hole(), Hole::Both);
        assert!(new_connections_hang(&proxy).await, "reconnects fall in");
        assert!(wait_hole(&proxy, Hole::None, Duration::from_secs(5)).await);
        assert!(struck_at.elapsed() >= Duration::from_millis(600));
        let mut fresh = connected(&proxy).await;
        assert_eq!(round_trip(&mut fresh, 7).await.unwrap(), frame(7));
        assert_eq!(*received.lock().unwrap(), vec![5, 7], "6 never arrived");
    });
}

#[test]
fn after_apply_forwards_the_request_and_swallows_its_reply() {
    runtime().block_on(async {
        let (server, received) = logging_echo_server().await;
        let proxy = FaultProxy::start(&server.to_string()).await.unwrap();
        let (hook, _) = hook_losing(1, RequestLoss::AfterApply { down_ms: 300 });
        proxy.set_request_hook(hook);
        let mut client = connected(&proxy).await;
        client.write_all(&frame(9)).await.unwrap();
        assert!(ends_cleanly(&mut client).await, "no reply, then a cut");
        assert_eq!(*received.lock().unwrap(), vec![9], "the server got it");
        let swallowed = proxy.swallowed();
        assert_eq!((swallowed.requests, swallowed.replies), (0, 1));
        assert_eq!(proxy.losses_struck(), 1);
        assert!(wait_hole(&proxy, Hole::None, Duration::from_secs(5)).await);
        let mut fresh = connected(&proxy).await;
        assert_eq!(round_trip(&mut fresh, 10).await.unwrap(), frame(10));
    });
}

#[test]
fn the_hook_is_not_asked_inside_a_hole() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        let (hook, asked) = hook_losing(1, RequestLoss::BeforeApply { down_ms: 0 });
        proxy.set_request_hook(hook);
        let mut client = connected(&proxy).await;
        proxy.black_hole(Hole::ToServer);
        client.write_all(&frame(3)).await.unwrap();
        proxy
            .wait_swallowed(|s| s.requests == 1, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(proxy.requests_numbered(), 1);
        assert!(asked.lock().unwrap().is_empty());
        assert_eq!(proxy.losses_struck(), 0);
    });
}

#[test]
fn drop_for_cuts_holds_new_connections_then_heals() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        let mut client = connected(&proxy).await;
        let dropped_at = tokio::time::Instant::now();
        proxy.drop_for(500);
        assert!(ends_cleanly(&mut client).await);
        assert!(new_connections_hang(&proxy).await);
        assert!(wait_hole(&proxy, Hole::None, Duration::from_secs(5)).await);
        assert!(dropped_at.elapsed() >= Duration::from_millis(500));
        let mut fresh = connected(&proxy).await;
        assert_eq!(round_trip(&mut fresh, 2).await.unwrap(), frame(2));
    });
}

#[test]
fn a_stale_heal_timer_leaves_a_later_hole_alone() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        proxy.drop_for(100);
        proxy.heal();
        proxy.drop_for(1_500);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(proxy.hole(), Hole::Both, "the first timer was stale");
        proxy.black_hole(Hole::ToServer);
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        assert_eq!(proxy.hole(), Hole::ToServer, "so was the second");
    });
}

/// A frame 0 shaped like a ConnectResponse (the echo server sends it
/// back, so the proxy sees it from the "server").
fn connect_response(timeout_ms: i32, session_id: i64, password: &[u8]) -> Vec<u8> {
    let mut body = 0i32.to_be_bytes().to_vec();
    body.extend(timeout_ms.to_be_bytes());
    body.extend(session_id.to_be_bytes());
    body.extend((password.len() as i32).to_be_bytes());
    body.extend(password);
    body.push(0);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend(body);
    frame
}

#[test]
fn the_latest_granted_session_is_recorded_and_a_refusal_clears_it() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&echo_server().await.to_string())
            .await
            .unwrap();
        assert_eq!(proxy.session(), None);
        let granted = connect_response(4_000, 77, b"secret");
        let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
        client.write_all(&granted).await.unwrap();
        let session = proxy.wait_session(Duration::from_secs(5)).await;
        let expected = LinkSession {
            session_id: 77,
            password: b"secret".to_vec(),
            timeout_ms: 4_000,
        };
        assert_eq!(session, Some(expected));
        let mut changes = proxy.session_changes();
        changes.borrow_and_update();
        let mut refused = TcpStream::connect(proxy.addr()).await.unwrap();
        refused
            .write_all(&connect_response(0, 0, &[0; 16]))
            .await
            .unwrap();
        let cleared = tokio::time::timeout(Duration::from_secs(5), changes.changed()).await;
        assert!(matches!(cleared, Ok(Ok(()))));
        assert_eq!(proxy.session(), None);
    });
}
