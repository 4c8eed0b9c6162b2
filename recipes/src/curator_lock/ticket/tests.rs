//! Unit tests of the ticket engine: wakeups that come ahead of the reply of
//! the request that set their watch, and events that must not wake a waiter.

use super::*;
use crate::zk::{KeeperState, Stat};

/// Waits for a node named `other` while it exists.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct WaitForOther;

impl Rule for WaitForOther {
    const WATCH_CHILDREN: bool = false;
    fn decide(&self, _own: &str, children: &[String]) -> Decision {
        match children.iter().any(|c| c == "other") {
            true => Decision::WaitFor("other".to_string()),
            false => Decision::Holds,
        }
    }
}

fn parent() -> Path {
    Path::new("/p").unwrap()
}

/// A ticket that created `/p/_c_7-x-0000000001` and now sets its watch
/// on `/p/other`.
fn watching() -> Ticket<WaitForOther> {
    let mut ticket = Ticket::new(parent(), 7, WaitForOther);
    let mut out = Outbox::new();
    ticket.on_session(
        SessionEvent::Connected {
            session_id: SessionId(1),
        },
        &mut out,
    );
    ticket.acquire("x-".to_string(), None, &mut out);
    let path = Path::new("/p/_c_7-x-0000000001").unwrap();
    let stat = Stat {
        czxid: 5,
        ephemeral_owner: 1,
        ..Stat::default()
    };
    ticket.on_reply(CREATE, Ok(Reply::Created { path, stat }), &mut out);
    let children = vec!["other".to_string(), "_c_7-x-0000000001".to_string()];
    ticket.on_reply(RANK, Ok(Reply::Children(children)), &mut out);
    assert!(matches!(
        out.requests.last(),
        Some((WATCH_NODE, Request::GetData { watch: true, .. }, _))
    ));
    ticket
}

#[test]
fn a_wakeup_ahead_of_its_reply_is_not_lost() {
    let mut ticket = watching();
    let mut out = Outbox::new();
    let other = parent().child("other").unwrap();
    ticket.on_watch(&WatchedEvent::node(EventType::NodeDeleted, other), &mut out);
    assert!(out.is_empty(), "acted on after the reply");
    ticket.on_reply(
        WATCH_NODE,
        Ok(Reply::Data {
            data: Vec::new(),
            stat: Stat::default(),
        }),
        &mut out,
    );
    assert!(
        matches!(
            out.requests.as_slice(),
            [(RANK, Request::GetChildren { .. }, _)]
        ),
        "{out:?}"
    );
}

#[test]
fn state_events_and_other_paths_do_not_wake_a_waiter() {
    let mut ticket = watching();
    let mut out = Outbox::new();
    ticket.on_reply(
        WATCH_NODE,
        Ok(Reply::Data {
            data: Vec::new(),
            stat: Stat::default(),
        }),
        &mut out,
    );
    ticket.on_watch(&WatchedEvent::state(KeeperState::Disconnected), &mut out);
    ticket.on_watch(
        &WatchedEvent::node(EventType::NodeDeleted, parent().child("x").unwrap()),
        &mut out,
    );
    assert!(out.is_empty(), "{out:?}");
    let other = parent().child("other").unwrap();
    ticket.on_watch(&WatchedEvent::node(EventType::NodeDeleted, other), &mut out);
    assert!(matches!(out.requests.as_slice(), [(RANK, _, _)]));
}

#[test]
fn a_duplicated_wakeup_sends_one_read() {
    let mut ticket = watching();
    let mut out = Outbox::new();
    ticket.on_reply(
        WATCH_NODE,
        Ok(Reply::Data {
            data: Vec::new(),
            stat: Stat::default(),
        }),
        &mut out,
    );
    let other = parent().child("other").unwrap();
    let event = WatchedEvent::node(EventType::NodeDeleted, other);
    ticket.on_watch(&event, &mut out);
    ticket.on_watch(&event, &mut out);
    assert_eq!(out.requests.len(), 1, "{out:?}");
}
