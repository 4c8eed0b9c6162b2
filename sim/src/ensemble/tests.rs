use super::*;
use crate::server::{SortedOrder, WatchSet};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, EventType, Path, Reply};

fn create(path: &str) -> Request {
    Request::Create {
        path: Path::new(path).unwrap(),
        data: Vec::new(),
        mode: CreateMode::Ephemeral,
        acl: Acls::Open,
    }
}

/// Three servers, one session on server 1 with an ephemeral node.
fn ensemble_with_session() -> (Ensemble, SessionId) {
    let mut ensemble = Ensemble::new(3, ServerConfig::default());
    let session = SessionId(7);
    ensemble
        .open_session(1, session, 4_000, &mut SortedOrder)
        .unwrap();
    while ensemble.lag(1) > 0 {
        ensemble.apply_next(1, &mut SortedOrder);
    }
    ensemble.submit(session, create("/e"), &mut SortedOrder);
    (ensemble, session)
}

#[test]
fn a_close_without_a_leader_waits_for_the_next_one() {
    let (mut ensemble, session) = ensemble_with_session();
    ensemble.begin_election();
    let events = ensemble
        .close_session(session, DeletionOrder::Permuted(0), &mut SortedOrder)
        .expect("a close while electing is accepted");
    assert!(events.is_empty(), "nothing commits without a leader");
    assert!(ensemble.is_closing(session));
    assert!(ensemble.committed().is_session_alive(session));
    // A second expiry of the same session is refused: it is closing.
    assert!(ensemble
        .close_session(session, DeletionOrder::Permuted(0), &mut SortedOrder)
        .is_err());
    ensemble.elect(2, &mut SortedOrder);
    assert!(!ensemble.is_closing(session));
    assert!(!ensemble.committed().is_session_alive(session));
    let ephemeral = Path::new("/e").unwrap();
    assert!(ensemble.committed().node_kind(&ephemeral).is_none());
}

#[test]
fn writes_and_closes_without_a_leader_commit_in_the_order_they_came() {
    let (mut ensemble, session) = ensemble_with_session();
    let other = SessionId(8);
    ensemble
        .open_session(2, other, 4_000, &mut SortedOrder)
        .unwrap();
    while ensemble.lag(2) > 0 {
        ensemble.apply_next(2, &mut SortedOrder);
    }
    ensemble.begin_election();
    // The other session's write first, then the close, then a write of
    // the closing session: the last fails with its session.
    ensemble.submit(other, create("/before"), &mut SortedOrder);
    ensemble
        .close_session(session, DeletionOrder::Permuted(0), &mut SortedOrder)
        .unwrap();
    ensemble.submit(session, create("/after"), &mut SortedOrder);
    let zxid = ensemble.committed().last_zxid();
    ensemble.elect(0, &mut SortedOrder);
    let committed = ensemble.committed();
    let before = committed
        .stat(&Path::new("/before").unwrap())
        .expect("committed");
    assert!(before.czxid > zxid);
    assert!(!committed.is_session_alive(session));
    assert!(committed.node_kind(&Path::new("/after").unwrap()).is_none());
    // Every server applies the same log.
    for server in 0..3 {
        while ensemble.lag(server) > 0 {
            ensemble.apply_next(server, &mut SortedOrder);
        }
        assert_eq!(
            ensemble.server(server).paths(),
            ensemble.committed().paths()
        );
    }
}

fn exists(path: &str) -> Request {
    Request::Exists {
        path: Path::new(path).unwrap(),
        watch: false,
    }
}

#[test]
fn a_noticed_leader_loss_closes_every_connection_and_drops_waiting_writes() {
    let (mut ensemble, session) = ensemble_with_session();
    let other = SessionId(8);
    ensemble
        .open_session(2, other, 4_000, &mut SortedOrder)
        .unwrap();
    while ensemble.lag(2) > 0 {
        ensemble.apply_next(2, &mut SortedOrder);
    }
    ensemble.begin_election();
    // Before the servers notice: connected, the write waits.
    let events = ensemble.submit(other, create("/waited"), &mut SortedOrder);
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(ensemble.server_of(other), Some(2));
    assert_eq!(ensemble.notice_leader_lost(), vec![session, other]);
    assert!(ensemble.is_looking());
    assert_eq!(ensemble.server_of(session), None);
    // No server serves until a leader is elected.
    let last = ensemble.committed().last_zxid();
    assert_eq!(
        ensemble.connect(1, session, last),
        Err(ConnectError::NotServing(1))
    );
    ensemble.elect(1, &mut SortedOrder);
    assert!(!ensemble.is_looking());
    let waited = Path::new("/waited").unwrap();
    assert!(ensemble.committed().node_kind(&waited).is_none());
    assert_eq!(ensemble.connect(2, other, last), Ok(()));
}

#[test]
fn a_moved_session_is_answered_after_what_the_leader_had_when_it_moved() {
    let (mut ensemble, session) = ensemble_with_session();
    while ensemble.lag(1) > 0 {
        ensemble.apply_next(1, &mut SortedOrder);
    }
    let seen = ensemble.server(1).last_zxid();
    // A second session deletes nothing but creates /late; server 2
    // has applied the opening only.
    let other = SessionId(8);
    ensemble
        .open_session(0, other, 4_000, &mut SortedOrder)
        .unwrap();
    ensemble.submit(other, create("/late"), &mut SortedOrder);
    while ensemble.server(2).last_zxid() < seen {
        ensemble.apply_next(2, &mut SortedOrder);
    }
    assert!(ensemble.lag(2) > 0, "server 2 lags behind /late");
    ensemble.disconnect(session);
    ensemble.connect_revalidated(2, session, seen).unwrap();
    let events = ensemble.submit(session, exists("/late"), &mut SortedOrder);
    assert!(
        events.is_empty(),
        "answered before revalidation: {events:?}"
    );
    let mut replies = Vec::new();
    while ensemble.lag(2) > 0 {
        replies.extend(ensemble.apply_next(2, &mut SortedOrder));
    }
    let [EnsembleEvent::Reply { applied, .. }] = replies.as_slice() else {
        panic!("one reply: {replies:?}");
    };
    assert!(
        matches!(applied.result, Ok(Reply::Exists(Some(_)))),
        "{applied:?}"
    );
}

/// What a session's watch on /n hears when it moves to a follower
/// that has applied none of `changes` (made by another session while
/// it was away): as a real 3.8 ensemble answers (issue 42 item 2),
/// the watches are read after the revalidation, against what the
/// follower applied by then.
fn rewatched_after(changes: &[Request], exists_first: bool, watch: &str) -> Vec<EventType> {
    let mut ensemble = Ensemble::new(3, ServerConfig::default());
    let (mover, other) = (SessionId(7), SessionId(8));
    for (server, session) in [(1, mover), (0, other)] {
        ensemble
            .open_session(server, session, 4_000, &mut SortedOrder)
            .unwrap();
    }
    if exists_first {
        let persistent = Request::Create {
            path: Path::new("/n").unwrap(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        };
        ensemble.submit(other, persistent, &mut SortedOrder);
    }
    for server in [1, 2] {
        while ensemble.lag(server) > 0 {
            ensemble.apply_next(server, &mut SortedOrder);
        }
    }
    let seen = ensemble.server(1).last_zxid();
    ensemble.disconnect(mover);
    for change in changes {
        ensemble.submit(other, change.clone(), &mut SortedOrder);
    }
    assert!(ensemble.lag(2) > 0, "server 2 has applied none of them");
    ensemble.connect_revalidated(2, mover, seen).unwrap();
    let n = vec![Path::new("/n").unwrap()];
    let watches = match watch {
        "data" => WatchSet {
            data: n,
            ..WatchSet::default()
        },
        _ => WatchSet {
            exist: n,
            ..WatchSet::default()
        },
    };
    let at_once = ensemble.set_watches(mover, seen, &watches);
    assert!(
        at_once.is_empty(),
        "read before the revalidation: {at_once:?}"
    );
    let mut heard = Vec::new();
    while ensemble.lag(2) > 0 {
        for event in ensemble.apply_next(2, &mut SortedOrder) {
            if let EnsembleEvent::Notify(n) = event {
                assert_eq!(n.session, mover);
                heard.push(n.event.event_type);
            }
        }
    }
    heard
}

#[test]
fn a_moved_session_s_watches_are_read_after_its_revalidation() {
    let n = || Path::new("/n").unwrap();
    let set = Request::SetData {
        path: n(),
        data: b"x".to_vec(),
        version: -1,
    };
    let delete = Request::Delete {
        path: n(),
        version: -1,
    };
    let create = Request::Create {
        path: n(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    };
    use EventType::*;
    // Set, then deleted while away: the node is gone when the watch is read.
    let changes = [set, delete.clone()];
    assert_eq!(rewatched_after(&changes, true, "data"), vec![NodeDeleted]);
    // Deleted, then created again: there, and changed since the client saw it.
    let changes = [delete.clone(), create.clone()];
    assert_eq!(
        rewatched_after(&changes, true, "data"),
        vec![NodeDataChanged]
    );
    // Created, then deleted: nothing to report, the watch stays armed.
    let changes = [create.clone(), delete];
    assert_eq!(rewatched_after(&changes, false, "exists"), vec![]);
}

#[test]
fn a_new_leader_gives_every_live_session_a_fresh_timeout() {
    let (mut ensemble, session) = ensemble_with_session();
    ensemble.disconnect(session);
    ensemble.begin_election();
    ensemble.set_time_ms(3_999);
    ensemble.elect(1, &mut SortedOrder);
    // Not heard from for 3,999 ms, but the new leader's tracker
    // restarted at election: not due at 4,000 ms.
    ensemble.set_time_ms(4_000);
    let (expired, _) = ensemble.expire_due(DeletionOrder::Permuted(0), &mut SortedOrder);
    assert!(expired.is_empty(), "{expired:?}");
    ensemble.set_time_ms(8_000);
    let (expired, _) = ensemble.expire_due(DeletionOrder::Permuted(0), &mut SortedOrder);
    assert_eq!(expired, vec![session]);
}
