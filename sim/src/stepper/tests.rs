use super::*;
use crate::diagnosis::{Removal, WatchKind};
use crate::ensemble::ConnectError;
use zk_recipes::lock::{FixedLock, LockCall};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path};

const MS: SimNanos = 1_000_000;

fn locks() -> Path {
    Path::new("/locks").unwrap()
}

fn stepper() -> Stepper<FixedLock> {
    let mut stepper = Stepper::new();
    let mkdir = Request::Create {
        path: locks(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    };
    stepper.admin(&mkdir).unwrap();
    stepper
}

/// The path of the one node `client` created.
fn node_of(stepper: &Stepper<FixedLock>, client: ClientId) -> Path {
    let (path, _) = stepper.history().node_of(client, SimNanos::MAX).unwrap();
    path.clone()
}

#[test]
fn the_history_follows_a_hand_over_at_the_drivers_time() {
    let mut s = stepper();
    let a = s.add_client(FixedLock::new(locks(), 1), 0x10);
    let b = s.add_client(FixedLock::new(locks(), 2), 0x20);
    s.set_time_ns(MS);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.set_time_ns(2 * MS);
    s.call(b, LockCall::Lock);
    s.run_client(b);
    let a_node = node_of(&s, a);
    let watch = &s.history().clients[b].watches[&(WatchKind::Data, a_node.clone())];
    assert_eq!((watch.set_ns, watch.by), (2 * MS, "exists"));

    assert_eq!(s.take_outcomes(a).len(), 1, "acquired");
    s.set_time_ns(3 * MS);
    s.call(a, LockCall::Unlock);
    s.run_client(a);
    s.set_time_ns(4 * MS);
    s.run_client(b);
    let history = s.history();
    let removed = &history.nodes[&a_node].removed;
    assert_eq!(removed, &Some((3 * MS, Removal::Deleted { by: a })));
    let event = history.clients[b].last_event.as_ref().unwrap();
    assert_eq!(
        (event.0, event.2),
        (4 * MS, true),
        "b acted on the deletion"
    );
    let holds: Vec<_> = history
        .holds
        .iter()
        .map(|h| (h.client, h.from_ns, h.until_ns))
        .collect();
    assert_eq!(
        holds,
        [(a, MS, Some(3 * MS)), (b, 4 * MS, None)],
        "a's release is recorded after its acquisition was taken"
    );

    s.set_time_ns(MS);
    assert_eq!(s.time_ns(), 4 * MS, "the history's time never goes back");

    let scene = s.scene(&[true, false], None);
    assert_eq!(scene.owners[&SessionId(0x20)], b);
    assert!(scene.clients[a].done && !scene.clients[b].done);
    assert_eq!(
        scene.clients[b].last_call,
        Some((2 * MS, "Lock".to_string()))
    );
    assert_eq!(scene.clients[a].pending_requests.len(), 0);
}

#[test]
fn a_lost_reply_and_an_expiry_are_recorded_as_the_world_records_them() {
    let mut s = stepper();
    let a = s.add_client(FixedLock::new(locks(), 1), 0x10);
    s.call(a, LockCall::Lock);
    while !matches!(
        s.client(a).outgoing.front(),
        Some((_, Request::Create { .. }, _))
    ) {
        assert!(s.step(a), "the lock creates its node");
    }
    s.set_time_ns(5 * MS);
    s.apply_then_disconnect(a);
    let node = node_of(&s, a);
    let record = &s.history().nodes[&node];
    assert!(!record.reply_delivered);
    assert_eq!(record.reply_lost_ns, Some(5 * MS));
    assert_eq!(record.owner, Some(SessionId(0x10)));

    s.set_time_ns(6 * MS);
    s.expire(a);
    let history = s.history();
    assert_eq!(history.clients[a].sessions_ended, [6 * MS]);
    let removed = &history.nodes[&node].removed;
    assert_eq!(
        removed,
        &Some((6 * MS, Removal::SessionEnded { client: a }))
    );
}

#[test]
fn in_ensemble_mode_a_follower_answers_once_it_applied_and_refuses_a_client_ahead_of_it() {
    let mut s = stepper();
    s.use_ensemble(2);
    let a = s.add_client(FixedLock::new(locks(), 1), 0x10);
    let b = s.add_client(FixedLock::new(locks(), 2), 0x20);
    while s.apply(1) {}
    let until_create = |s: &mut Stepper<FixedLock>, c| {
        while !matches!(
            s.client(c).outgoing.front(),
            Some((_, Request::Create { .. }, _))
        ) {
            assert!(s.step(c));
        }
    };
    s.call(a, LockCall::Lock);
    until_create(&mut s, a);
    assert!(s.send(a));
    assert!(s.deliver(a), "the leader answers at once");
    assert_eq!(s.ensemble().unwrap().lag(1), 1);
    s.call(b, LockCall::Lock);
    until_create(&mut s, b);
    assert!(s.send(b));
    assert!(!s.deliver(b), "server 1 has not applied b's create");
    assert!(s.apply(1), "a's create");
    assert!(!s.deliver(b));
    assert!(s.apply(1), "b's create");
    assert!(s.deliver(b));
    assert!(!s.apply(1), "caught up");

    // a releases at the leader and sees its delete; server 1, behind
    // that, refuses a until it applied it.
    s.run_client(a);
    s.call(a, LockCall::Unlock);
    s.run_client(a);
    assert!(s.ensemble().unwrap().lag(1) > 0);
    s.disconnect(a);
    assert!(matches!(
        s.reconnect_to(a, 1),
        Err(ConnectError::Behind { server: 1, .. })
    ));
    while s.apply(1) {}
    s.reconnect_to(a, 1).expect("server 1 caught up");
    assert_eq!(s.ensemble().unwrap().server_of(SessionId(0x10)), Some(1));
}

#[test]
fn a_request_lost_before_the_server_is_the_last_loss() {
    let mut s = stepper();
    let a = s.add_client(FixedLock::new(locks(), 1), 0x10);
    s.set_time_ns(MS);
    s.call(a, LockCall::Lock);
    assert_eq!(s.history().clients[a].last_send_ns, MS, "sent on the call");
    s.set_time_ns(2 * MS);
    assert!(s.lose_request(a));
    let (at, request) = s.history().clients[a].last_loss.clone().unwrap();
    assert_eq!(at, 2 * MS);
    assert_eq!(request, "create(/locks/x-1-, EphemeralSequential)");
}

#[test]
fn a_session_the_client_gave_up_on_keeps_its_node_until_the_server_expires_it() {
    let mut s = stepper();
    let a = s.add_client(FixedLock::new(locks(), 1), 0x10);
    let b = s.add_client(FixedLock::new(locks(), 2), 0x20);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.call(b, LockCall::Lock);
    s.run_client(b);
    let a_node = node_of(&s, a);
    assert!(!s.give_up_session(a), "only a disconnected client gives up");
    s.disconnect(a);
    assert!(s.give_up_session(a));
    assert_eq!(s.state(a), ConnectionState::Expired);
    assert!(s.server().is_session_alive(SessionId(0x10)));
    assert!(
        s.server().stat(&a_node).is_some(),
        "the server keeps its node"
    );
    s.new_session(a, 0x110);
    s.run();
    assert!(s.server().stat(&a_node).is_some());

    assert!(s.expire_session_on_server(SessionId(0x10), 0));
    assert!(!s.expire_session_on_server(SessionId(0x10), 0));
    assert!(s.server().stat(&a_node).is_none());
    let removed = &s.history().nodes[&a_node].removed;
    assert_eq!(removed, &Some((0, Removal::SessionEnded { client: a })));
    assert!(
        !s.clients[b].inbox.is_empty(),
        "b's watch on the node fired"
    );
}

#[test]
fn leader_loss_disconnects_every_connected_client() {
    let mut s = stepper();
    let a = s.add_client(FixedLock::new(locks(), 1), 0x10);
    let b = s.add_client(FixedLock::new(locks(), 2), 0x20);
    s.call(a, LockCall::Lock);
    assert!(s.send(a), "a's create reached the server");
    s.leader_loss();
    assert_eq!(s.state(a), ConnectionState::Disconnected);
    assert_eq!(s.state(b), ConnectionState::Disconnected);
    assert!(s.clients[a].inbox.is_empty(), "the reply was lost");
    assert!(s.server().is_session_alive(SessionId(0x10)));
    assert!(s.server().is_session_alive(SessionId(0x20)));
}
