//! The server core's persistent and recursive watches (`addWatch`, 3.8.0's
//! WatchManager and DataTree): which events each mode hears, descendants,
//! one event per session and trigger, coexistence with one-shot watches,
//! re-registration after a reconnect (SetWatches2), the session's end.
//! The client-side half is in `client/tests/conformance.rs`, measured on a
//! real 3.8.0 server.

use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    AddWatchMode, CreateMode, EventType, Path, Reply, Request, SessionId, WatchedEvent, ZkResult,
    ANY_VERSION,
};
use zk_sim::server::{Notification, ServerConfig, SortedOrder, WatchSet, ZkServer};

const A: SessionId = SessionId(0x100);
const B: SessionId = SessionId(0x200);
const C: SessionId = SessionId(0x300);

use AddWatchMode::{Persistent, PersistentRecursive as Recursive};
use EventType::{NodeChildrenChanged, NodeCreated, NodeDataChanged, NodeDeleted};

fn p(path: &str) -> Path {
    Path::new(path).unwrap()
}

fn server() -> ZkServer {
    let mut server = ZkServer::new(ServerConfig::default());
    for session in [A, B, C] {
        server.open_session(session, 10_000).unwrap();
    }
    server
}

/// Runs `request` as `session`; the notifications it fired.
fn run(server: &mut ZkServer, session: SessionId, request: Request) -> Vec<Notification> {
    let applied = server.apply(session, &request, &mut SortedOrder);
    assert!(applied.result.is_ok(), "{request:?}: {:?}", applied.result);
    applied.notifications
}

fn add_watch(server: &mut ZkServer, session: SessionId, path: &str, mode: AddWatchMode) {
    let applied = server.apply(
        session,
        &Request::AddWatch {
            path: p(path),
            mode,
        },
        &mut SortedOrder,
    );
    assert_eq!(applied.result, Ok(Reply::WatchAdded));
}

fn create(server: &mut ZkServer, path: &str) -> Vec<Notification> {
    create_with(server, A, path, CreateMode::Persistent)
}

fn create_with(
    server: &mut ZkServer,
    session: SessionId,
    path: &str,
    mode: CreateMode,
) -> Vec<Notification> {
    let data = Vec::new();
    run(
        server,
        session,
        Request::Create {
            path: p(path),
            data,
            mode,
            acl: Acls::Open,
        },
    )
}

fn set(server: &mut ZkServer, path: &str) -> Vec<Notification> {
    let (path, data) = (p(path), b"x".to_vec());
    run(
        server,
        A,
        Request::SetData {
            path,
            data,
            version: ANY_VERSION,
        },
    )
}

fn delete(server: &mut ZkServer, path: &str) -> Vec<Notification> {
    let path = p(path);
    run(
        server,
        A,
        Request::Delete {
            path,
            version: ANY_VERSION,
        },
    )
}

fn get_data_watch(server: &mut ZkServer, session: SessionId, path: &str) -> ZkResult {
    let request = Request::GetData {
        path: p(path),
        watch: true,
    };
    server.apply(session, &request, &mut SortedOrder).result
}

fn note(session: SessionId, event_type: EventType, path: &str) -> Notification {
    Notification {
        session,
        event: WatchedEvent::node(event_type, p(path)),
    }
}

#[test]
fn add_watch_needs_no_node_and_consumes_no_zxid() {
    let mut server = server();
    let zxid = server.last_zxid();
    add_watch(&mut server, B, "/missing/deep", Persistent);
    add_watch(&mut server, B, "/missing", Recursive);
    assert_eq!(server.last_zxid(), zxid);
}

#[test]
fn a_persistent_watch_hears_every_event_of_its_path_and_stays_armed() {
    let mut server = server();
    add_watch(&mut server, B, "/a", Persistent);
    assert_eq!(create(&mut server, "/a"), [note(B, NodeCreated, "/a")]);
    assert_eq!(set(&mut server, "/a"), [note(B, NodeDataChanged, "/a")]);
    assert_eq!(set(&mut server, "/a"), [note(B, NodeDataChanged, "/a")]);
    assert_eq!(
        create(&mut server, "/a/c"),
        [note(B, NodeChildrenChanged, "/a")]
    );
    // Not a descendant's own events.
    assert_eq!(set(&mut server, "/a/c"), []);
    assert_eq!(
        delete(&mut server, "/a/c"),
        [note(B, NodeChildrenChanged, "/a")]
    );
    // One NodeDeleted though the watch is in both tables.
    assert_eq!(delete(&mut server, "/a"), [note(B, NodeDeleted, "/a")]);
    assert_eq!(create(&mut server, "/a"), [note(B, NodeCreated, "/a")]);
}

#[test]
fn a_recursive_watch_hears_its_subtree_but_no_children_changed() {
    let mut server = server();
    create(&mut server, "/ab");
    add_watch(&mut server, B, "/a", Recursive);
    assert_eq!(create(&mut server, "/a"), [note(B, NodeCreated, "/a")]);
    assert_eq!(create(&mut server, "/a/c"), [note(B, NodeCreated, "/a/c")]);
    assert_eq!(
        create(&mut server, "/a/c/d"),
        [note(B, NodeCreated, "/a/c/d")]
    );
    assert_eq!(
        set(&mut server, "/a/c/d"),
        [note(B, NodeDataChanged, "/a/c/d")]
    );
    assert_eq!(
        delete(&mut server, "/a/c/d"),
        [note(B, NodeDeleted, "/a/c/d")]
    );
    // A sibling whose name starts alike is not under /a.
    assert_eq!(set(&mut server, "/ab"), []);
    delete(&mut server, "/a/c");
    assert_eq!(delete(&mut server, "/a"), [note(B, NodeDeleted, "/a")]);
    assert_eq!(create(&mut server, "/a"), [note(B, NodeCreated, "/a")]);
}

#[test]
fn one_event_per_session_however_many_watches_cover_the_change() {
    let mut server = server();
    create(&mut server, "/a");
    create(&mut server, "/a/b");
    add_watch(&mut server, B, "/", Recursive);
    add_watch(&mut server, B, "/a", Recursive);
    add_watch(&mut server, B, "/a/b", Persistent);
    add_watch(&mut server, C, "/a", Recursive);
    assert_eq!(
        set(&mut server, "/a/b"),
        [
            note(B, NodeDataChanged, "/a/b"),
            note(C, NodeDataChanged, "/a/b")
        ]
    );
    // The persistent watch on /a/b and the recursive ones: two triggers
    // (the data table's NodeCreated, the child table's children change).
    assert_eq!(
        create(&mut server, "/a/b/c"),
        [
            note(B, NodeCreated, "/a/b/c"),
            note(C, NodeCreated, "/a/b/c"),
            note(B, NodeChildrenChanged, "/a/b")
        ]
    );
}

#[test]
fn a_one_shot_watch_of_the_same_session_turns_the_data_table_one_shot() {
    // 3.8.0 keeps one mode per session, path and table (ZOOKEEPER-4466,
    // fixed in 3.9): getData's watch replaces the persistent data watch.
    let mut server = server();
    create(&mut server, "/a");
    add_watch(&mut server, B, "/a", Persistent);
    assert!(get_data_watch(&mut server, B, "/a").is_ok());
    assert!(get_data_watch(&mut server, C, "/a").is_ok());
    assert_eq!(
        set(&mut server, "/a"),
        [
            note(B, NodeDataChanged, "/a"),
            note(C, NodeDataChanged, "/a")
        ]
    );
    assert_eq!(set(&mut server, "/a"), []);
    // The child table's watch is still persistent.
    assert_eq!(
        create(&mut server, "/a/c"),
        [note(B, NodeChildrenChanged, "/a")]
    );
    assert_eq!(
        create(&mut server, "/a/d"),
        [note(B, NodeChildrenChanged, "/a")]
    );
}

#[test]
fn add_watch_turns_a_one_shot_watch_of_the_same_session_persistent() {
    let mut server = server();
    create(&mut server, "/a");
    assert!(get_data_watch(&mut server, B, "/a").is_ok());
    add_watch(&mut server, B, "/a", Persistent);
    assert_eq!(set(&mut server, "/a"), [note(B, NodeDataChanged, "/a")]);
    assert_eq!(set(&mut server, "/a"), [note(B, NodeDataChanged, "/a")]);
    // A recursive addWatch on the path replaces the data table's mode.
    add_watch(&mut server, B, "/a", Recursive);
    assert_eq!(
        create(&mut server, "/a/c"),
        [
            note(B, NodeCreated, "/a/c"),
            note(B, NodeChildrenChanged, "/a")
        ]
    );
}

#[test]
fn a_disconnect_drops_them_and_set_watches_rearms_them_without_catching_up() {
    let mut server = server();
    create(&mut server, "/a");
    add_watch(&mut server, B, "/a", Persistent);
    add_watch(&mut server, B, "/r", Recursive);
    let seen = server.last_zxid();
    server.disconnect(B);
    assert_eq!(set(&mut server, "/a"), []);
    assert_eq!(create(&mut server, "/r"), []);
    let watches = WatchSet {
        persistent: vec![p("/a")],
        recursive: vec![p("/r")],
        ..WatchSet::default()
    };
    // 3.8.0 sends nothing for what changed while away (ZOOKEEPER-4698).
    assert_eq!(server.set_watches(B, seen, &watches), []);
    assert_eq!(set(&mut server, "/a"), [note(B, NodeDataChanged, "/a")]);
    assert_eq!(create(&mut server, "/r/x"), [note(B, NodeCreated, "/r/x")]);
    assert_eq!(
        create(&mut server, "/a/x"),
        [note(B, NodeChildrenChanged, "/a")]
    );
}

#[test]
fn the_sessions_end_forgets_its_watches_and_fires_the_others() {
    let mut server = server();
    create(&mut server, "/r");
    create(&mut server, "/o");
    add_watch(&mut server, B, "/r", Recursive);
    add_watch(&mut server, C, "/o", Persistent);
    create_with(&mut server, C, "/r/e", CreateMode::Ephemeral);
    // C's end deletes its ephemeral: B hears it; C's watch is gone.
    assert_eq!(
        server.close_session(C, &mut SortedOrder).unwrap(),
        [note(B, NodeDeleted, "/r/e")]
    );
    assert_eq!(set(&mut server, "/o"), []);
    assert_eq!(set(&mut server, "/r"), [note(B, NodeDataChanged, "/r")]);
    server.close_session(B, &mut SortedOrder).unwrap();
    assert_eq!(set(&mut server, "/r"), []);
}
