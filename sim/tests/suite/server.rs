//! The in-memory server core against ZooKeeper 3.8's rules: one test per
//! rule (names, counters, stats, zxids, errors, watches, sessions,
//! setWatches, multi, containers, TTL, getChildren, sync). Where the rule
//! was measured on a real 3.8.0 server, the test says so.

use std::collections::BTreeSet;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, KeeperState, MultiOp, OpResult, Path, Reply, Request, SessionId, Stat,
    WatchedEvent, ZkError, ZkResult, ANY_VERSION,
};
use zk_sim::server::{
    Applied, ChildOrder, NodeKind, Notification, PermutedOrder, ServerConfig, SessionError,
    SortedOrder, WatchSet, ZkServer, MAX_TTL_MS,
};

const A: SessionId = SessionId(0x100);
const B: SessionId = SessionId(0x200);
const C: SessionId = SessionId(0x300);
const TIMEOUT_MS: u64 = 10_000;

fn p(path: &str) -> Path {
    Path::new(path).unwrap()
}

fn prefix(path: &str) -> Path {
    Path::sequential_prefix(path).unwrap()
}

/// A server with sessions A, B and C open.
fn server() -> ZkServer {
    server_with(ServerConfig::default())
}

fn server_with(config: ServerConfig) -> ZkServer {
    let mut server = ZkServer::new(config);
    for session in [A, B, C] {
        server.open_session(session, TIMEOUT_MS).unwrap();
    }
    server
}

fn run(server: &mut ZkServer, session: SessionId, request: Request) -> Applied {
    server.apply(session, &request, &mut SortedOrder)
}

fn create_req(path: Path, mode: CreateMode) -> Request {
    Request::Create {
        path,
        data: Vec::new(),
        mode,
        acl: Acls::Open,
    }
}

fn create_as(server: &mut ZkServer, session: SessionId, path: &str, mode: CreateMode) -> ZkResult {
    let path = if mode.is_sequential() {
        prefix(path)
    } else {
        p(path)
    };
    run(server, session, create_req(path, mode)).result
}

/// Creates as session A and returns the created path.
fn create(server: &mut ZkServer, path: &str, mode: CreateMode) -> String {
    match create_as(server, A, path, mode) {
        Ok(Reply::Created { path, .. }) => path.to_string(),
        other => panic!("create {path}: {other:?}"),
    }
}

fn persistent(server: &mut ZkServer, path: &str) {
    create(server, path, CreateMode::Persistent);
}

fn delete(server: &mut ZkServer, path: &str, version: i32) -> Applied {
    run(
        server,
        A,
        Request::Delete {
            path: p(path),
            version,
        },
    )
}

fn set_data(server: &mut ZkServer, path: &str, data: &[u8], version: i32) -> Applied {
    run(
        server,
        A,
        Request::SetData {
            path: p(path),
            data: data.to_vec(),
            version,
        },
    )
}

fn check(server: &mut ZkServer, path: &str, version: i32) -> ZkResult {
    run(
        server,
        A,
        Request::Check {
            path: p(path),
            version,
        },
    )
    .result
}

fn exists_watch(server: &mut ZkServer, session: SessionId, path: &str) -> ZkResult {
    run(
        server,
        session,
        Request::Exists {
            path: p(path),
            watch: true,
        },
    )
    .result
}

fn get_data_watch(server: &mut ZkServer, session: SessionId, path: &str) -> ZkResult {
    run(
        server,
        session,
        Request::GetData {
            path: p(path),
            watch: true,
        },
    )
    .result
}

fn children_watch(server: &mut ZkServer, session: SessionId, path: &str) -> ZkResult {
    run(
        server,
        session,
        Request::GetChildren {
            path: p(path),
            watch: true,
        },
    )
    .result
}

fn stat(server: &ZkServer, path: &str) -> Stat {
    server
        .stat(&p(path))
        .unwrap_or_else(|| panic!("{path} missing"))
}

fn note(session: SessionId, event_type: EventType, path: &str) -> Notification {
    Notification {
        session,
        event: WatchedEvent::node(event_type, p(path)),
    }
}

fn failed(index: usize, error: ZkError) -> ZkResult {
    Err(ZkError::MultiFailed {
        index,
        error: Box::new(error),
    })
}

fn names(reply: ZkResult) -> Vec<String> {
    match reply {
        Ok(Reply::Children(names)) => names,
        other => panic!("not children: {other:?}"),
    }
}

// ---------------------------------------------------------------- paths

#[test]
fn create_needs_an_existing_parent() {
    let mut server = server();
    assert_eq!(
        create_as(&mut server, A, "/missing/child", CreateMode::Persistent),
        Err(ZkError::NoNode)
    );
    assert_eq!(
        create_as(
            &mut server,
            A,
            "/missing/seq-",
            CreateMode::PersistentSequential
        ),
        Err(ZkError::NoNode)
    );
    assert_eq!(server.paths(), vec![p("/")]);
}

#[test]
fn create_of_an_existing_node_is_node_exists() {
    let mut server = server();
    persistent(&mut server, "/a");
    assert_eq!(
        create_as(&mut server, B, "/a", CreateMode::Ephemeral),
        Err(ZkError::NodeExists)
    );
    // Probed on 3.8.0: `create /` answers "Node already exists: /".
    assert_eq!(
        run(
            &mut server,
            A,
            create_req(Path::root(), CreateMode::Persistent)
        )
        .result,
        Err(ZkError::NodeExists)
    );
}

#[test]
fn trailing_slash_is_bad_arguments_unless_sequential() {
    let mut server = server();
    persistent(&mut server, "/q");
    let plain = run(
        &mut server,
        A,
        create_req(prefix("/q/"), CreateMode::Persistent),
    )
    .result;
    assert_eq!(plain, Err(ZkError::BadArguments));
    // The failed create did not move the counter. (Probed on 3.8.0:
    // `create -s /p/` makes `/p/0000000003` after three children.)
    assert_eq!(
        create(&mut server, "/q/", CreateMode::PersistentSequential),
        "/q/0000000000"
    );
}

#[test]
fn the_root_cannot_be_deleted() {
    let mut server = server();
    assert_eq!(
        run(
            &mut server,
            A,
            Request::Delete {
                path: Path::root(),
                version: ANY_VERSION
            }
        )
        .result,
        Err(ZkError::BadArguments)
    );
    assert_eq!(server.paths(), vec![p("/")]);
}

// ---------------------------------------------------------------- sequence names and counters

#[test]
fn sequential_names_use_the_parents_counter_of_all_creates_not_deletes() {
    // The measurement on the real 3.8.0 server quoted in the brief.
    let mut server = server();
    persistent(&mut server, "/p");
    assert_eq!(
        create(&mut server, "/p/a-", CreateMode::PersistentSequential),
        "/p/a-0000000000"
    );
    persistent(&mut server, "/p/x");
    assert_eq!(
        create(&mut server, "/p/a-", CreateMode::EphemeralSequential),
        "/p/a-0000000002"
    );
    assert!(delete(&mut server, "/p/x", ANY_VERSION).result.is_ok());
    assert!(delete(&mut server, "/p/a-0000000000", ANY_VERSION)
        .result
        .is_ok());
    assert_eq!(
        create(&mut server, "/p/a-", CreateMode::PersistentSequential),
        "/p/a-0000000003"
    );
    let parent = stat(&server, "/p");
    assert_eq!((parent.cversion, parent.num_children), (6, 2));
    assert_eq!(server.sequence_counter(&p("/p")), Some(4));
    // Counters are per parent.
    persistent(&mut server, "/other");
    assert_eq!(
        create(&mut server, "/other/a-", CreateMode::PersistentSequential),
        "/other/a-0000000000"
    );
}

#[test]
fn a_failed_create_does_not_move_the_counter() {
    let mut server = server();
    persistent(&mut server, "/p");
    persistent(&mut server, "/p/x");
    assert_eq!(
        create_as(&mut server, A, "/p/x", CreateMode::Persistent),
        Err(ZkError::NodeExists)
    );
    assert_eq!(
        create(&mut server, "/p/s-", CreateMode::PersistentSequential),
        "/p/s-0000000001"
    );
}

#[test]
fn negative_counters_format_like_javas_percent_010d() {
    let mut server = server();
    persistent(&mut server, "/p");
    server.set_sequence_counter(&p("/p"), -1).unwrap();
    assert_eq!(
        create(&mut server, "/p/s-", CreateMode::PersistentSequential),
        "/p/s--000000001"
    );
    assert_eq!(
        create(&mut server, "/p/s-", CreateMode::PersistentSequential),
        "/p/s-0000000000"
    );
    assert_eq!(
        server.set_sequence_counter(&p("/nope"), 5),
        Err(ZkError::NoNode)
    );
}

#[test]
fn the_counter_sticks_at_i32_max_between_requests() {
    // Probed on 3.8.0 (its DataTree, counter pushed with setCversionPzxid):
    // s-2147483646 (cversion -3), s-2147483647 (cversion -4), then
    // NodeExists; after deleting s-2147483647 the next is s-2147483647 again.
    let mut server = server();
    persistent(&mut server, "/w");
    server.set_sequence_counter(&p("/w"), i32::MAX - 1).unwrap();
    assert_eq!(
        create(&mut server, "/w/s-", CreateMode::PersistentSequential),
        "/w/s-2147483646"
    );
    assert_eq!(stat(&server, "/w").cversion, -3);
    let pzxid = stat(&server, "/w").pzxid;
    assert_eq!(
        create(&mut server, "/w/s-", CreateMode::PersistentSequential),
        "/w/s-2147483647"
    );
    assert_eq!(
        (stat(&server, "/w").cversion, stat(&server, "/w").pzxid),
        (-4, pzxid)
    );
    assert_eq!(
        create_as(&mut server, A, "/w/s-", CreateMode::PersistentSequential),
        Err(ZkError::NodeExists)
    );
    assert_eq!(server.sequence_counter(&p("/w")), Some(i32::MAX));
    assert!(delete(&mut server, "/w/s-2147483647", ANY_VERSION)
        .result
        .is_ok());
    assert_eq!(
        create(&mut server, "/w/s-", CreateMode::PersistentSequential),
        "/w/s-2147483647"
    );
}

#[test]
fn the_counter_wraps_to_i32_min_inside_one_multi() {
    // Probed on 3.8.0: m-2147483647 then m--2147483648 in one multi.
    let mut server = server();
    persistent(&mut server, "/w");
    server.set_sequence_counter(&p("/w"), i32::MAX).unwrap();
    let seq = MultiOp::Create {
        path: prefix("/w/m-"),
        data: Vec::new(),
        mode: CreateMode::PersistentSequential,
        acl: Acls::Open,
    };
    let reply = run(&mut server, A, Request::Multi(vec![seq.clone(), seq])).result;
    let Ok(Reply::Multi(results)) = reply else {
        panic!("{reply:?}")
    };
    let created: Vec<String> = results
        .iter()
        .map(|result| match result {
            OpResult::Created { path, .. } => path.to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(created, ["/w/m-2147483647", "/w/m--2147483648"]);
    assert_eq!(server.sequence_counter(&p("/w")), Some(i32::MAX));
}

#[test]
fn cversion_counts_child_creates_and_deletes() {
    let mut server = server();
    persistent(&mut server, "/p");
    for (step, expected) in [
        ("create", 1),
        ("create", 2),
        ("delete", 3),
        ("create", 4),
        ("delete", 5),
        ("delete", 6),
    ] {
        if step == "create" {
            create(&mut server, "/p/c-", CreateMode::PersistentSequential);
        } else {
            let first = names(
                run(
                    &mut server,
                    A,
                    Request::GetChildren {
                        path: p("/p"),
                        watch: false,
                    },
                )
                .result,
            )[0]
            .clone();
            assert!(delete(&mut server, &format!("/p/{first}"), ANY_VERSION)
                .result
                .is_ok());
        }
        assert_eq!(stat(&server, "/p").cversion, expected, "after {step}");
    }
    assert_eq!(stat(&server, "/p").num_children, 0);
}

// ---------------------------------------------------------------- stat

#[test]
fn stat_fields_follow_creates_sets_and_child_changes() {
    let mut server = server();
    server.set_time_ms(1_000);
    let created = run(
        &mut server,
        A,
        Request::Create {
            path: p("/n"),
            data: b"abc".to_vec(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        },
    );
    let Ok(Reply::Created {
        stat: at_create, ..
    }) = created.result
    else {
        panic!()
    };
    let zxid = created.zxid;
    assert_eq!(
        at_create,
        Stat {
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime_ms: 1_000,
            mtime_ms: 1_000,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: 3,
            num_children: 0,
        }
    );
    server.set_time_ms(2_000);
    let set = set_data(&mut server, "/n", b"hello", 0);
    let Ok(Reply::DataSet(after_set)) = set.result else {
        panic!()
    };
    assert_eq!(
        (
            after_set.mzxid,
            after_set.mtime_ms,
            after_set.version,
            after_set.data_length
        ),
        (set.zxid, 2_000, 1, 5)
    );
    assert_eq!(
        (after_set.czxid, after_set.ctime_ms, after_set.pzxid),
        (zxid, 1_000, zxid)
    );
    let child = run(
        &mut server,
        A,
        create_req(p("/n/c"), CreateMode::Persistent),
    );
    let parent = stat(&server, "/n");
    assert_eq!(
        (
            parent.pzxid,
            parent.cversion,
            parent.num_children,
            parent.mzxid
        ),
        (child.zxid, 1, 1, set.zxid)
    );
    let gone = delete(&mut server, "/n/c", ANY_VERSION);
    assert_eq!(
        (stat(&server, "/n").pzxid, stat(&server, "/n").cversion),
        (gone.zxid, 2)
    );
    assert_eq!(server.data(&p("/n")), Some(&b"hello"[..]));
}

#[test]
fn ephemeral_owner_is_the_session_and_zero_for_containers_and_ttl_nodes() {
    // Probed on 3.8.0: `stat` shows ephemeralOwner = 0x0 for `create -c`
    // and `create -t`; the server keeps i64::MIN / 0xFF<<56|ttl inside.
    let mut server = server();
    create_as(&mut server, B, "/e", CreateMode::Ephemeral).unwrap();
    create(&mut server, "/c", CreateMode::Container);
    create(
        &mut server,
        "/t",
        CreateMode::PersistentWithTtl { ttl_ms: 5_000 },
    );
    persistent(&mut server, "/p");
    let owners: Vec<i64> = ["/e", "/c", "/t", "/p"]
        .iter()
        .map(|path| stat(&server, path).ephemeral_owner)
        .collect();
    assert_eq!(owners, [B.0, 0, 0, 0]);
    assert_eq!(server.node_kind(&p("/c")), Some(NodeKind::Container));
    assert_eq!(
        server.node_kind(&p("/t")),
        Some(NodeKind::Ttl { ttl_ms: 5_000 })
    );
    assert_eq!(NodeKind::Container.stored_ephemeral_owner(), i64::MIN);
    assert_eq!(
        NodeKind::Ttl { ttl_ms: 5_000 }.stored_ephemeral_owner(),
        (0xFF00_0000_0000_0000_u64 as i64) | 5_000
    );
}

// ---------------------------------------------------------------- zxid

#[test]
fn every_write_and_session_change_consumes_one_zxid_and_reads_none() {
    let mut server = ZkServer::new(ServerConfig::default());
    assert_eq!(server.last_zxid(), 0);
    server.open_session(A, TIMEOUT_MS).unwrap();
    assert_eq!(server.last_zxid(), 1);
    let writes = [
        create_req(p("/a"), CreateMode::Persistent),
        create_req(p("/a"), CreateMode::Persistent), // NodeExists
        Request::SetData {
            path: p("/a"),
            data: vec![1],
            version: 7,
        }, // BadVersion
        Request::SetData {
            path: p("/a"),
            data: vec![1],
            version: 0,
        },
        Request::Check {
            path: p("/a"),
            version: 1,
        },
        Request::Check {
            path: p("/nope"),
            version: 1,
        }, // NoNode
        Request::Multi(vec![
            MultiOp::Check {
                path: p("/a"),
                version: 1,
            },
            MultiOp::Check {
                path: p("/a"),
                version: 1,
            },
        ]),
        Request::Multi(vec![MultiOp::Delete {
            path: p("/nope"),
            version: -1,
        }]), // fails
        Request::Delete {
            path: p("/a"),
            version: 1,
        },
    ];
    for (i, request) in writes.into_iter().enumerate() {
        let applied = run(&mut server, A, request);
        assert_eq!(applied.zxid, 2 + i as i64, "write {i}: {applied:?}");
        assert_eq!(server.last_zxid(), applied.zxid);
    }
    let reads = [
        Request::Exists {
            path: p("/a"),
            watch: true,
        },
        Request::GetData {
            path: p("/"),
            watch: true,
        },
        Request::GetChildren {
            path: p("/"),
            watch: true,
        },
        Request::GetChildren2 {
            path: p("/nope"),
            watch: true,
        },
        Request::Sync { path: p("/") },
    ];
    for request in reads {
        assert_eq!(run(&mut server, A, request).zxid, 10);
    }
    server.close_session(A, &mut SortedOrder).unwrap();
    assert_eq!(server.last_zxid(), 11);
    // A request on a dead session consumes nothing either.
    assert_eq!(
        run(&mut server, A, create_req(p("/b"), CreateMode::Persistent)).zxid,
        11
    );
}

// ---------------------------------------------------------------- errors

#[test]
fn delete_of_a_node_with_children_is_not_empty() {
    let mut server = server();
    persistent(&mut server, "/a");
    persistent(&mut server, "/a/b");
    assert_eq!(
        delete(&mut server, "/a", ANY_VERSION).result,
        Err(ZkError::NotEmpty)
    );
    assert_eq!(
        delete(&mut server, "/nope", ANY_VERSION).result,
        Err(ZkError::NoNode)
    );
}

#[test]
fn versions_must_match_unless_any_version() {
    let mut server = server();
    persistent(&mut server, "/v");
    assert_eq!(
        set_data(&mut server, "/v", b"x", 1).result,
        Err(ZkError::BadVersion)
    );
    assert!(set_data(&mut server, "/v", b"x", 0).result.is_ok());
    assert!(set_data(&mut server, "/v", b"y", ANY_VERSION)
        .result
        .is_ok());
    assert_eq!(stat(&server, "/v").version, 2);
    assert_eq!(
        set_data(&mut server, "/nope", b"x", ANY_VERSION).result,
        Err(ZkError::NoNode)
    );
    assert_eq!(
        delete(&mut server, "/v", 1).result,
        Err(ZkError::BadVersion)
    );
    assert_eq!(delete(&mut server, "/v", 2).result, Ok(Reply::Deleted));
}

#[test]
fn check_is_no_node_when_missing_and_bad_version_on_mismatch() {
    let mut server = server();
    persistent(&mut server, "/v");
    assert_eq!(
        check(&mut server, "/nope", ANY_VERSION),
        Err(ZkError::NoNode)
    );
    assert_eq!(check(&mut server, "/v", 3), Err(ZkError::BadVersion));
    assert_eq!(check(&mut server, "/v", 0), Ok(Reply::Checked));
    assert_eq!(check(&mut server, "/v", ANY_VERSION), Ok(Reply::Checked));
}

#[test]
fn ephemerals_cannot_have_children() {
    // Probed on 3.8.0: "Ephemerals cannot have children".
    let mut server = server();
    create(&mut server, "/e", CreateMode::Ephemeral);
    assert_eq!(
        create_as(&mut server, A, "/e/x", CreateMode::Persistent),
        Err(ZkError::NoChildrenForEphemerals)
    );
    assert_eq!(
        create_as(&mut server, B, "/e/s-", CreateMode::EphemeralSequential),
        Err(ZkError::NoChildrenForEphemerals)
    );
}

#[test]
fn ttl_modes_are_unimplemented_without_extended_types() {
    // Probed on 3.8.0 with extendedTypesEnabled=false: UNIMPLEMENTED, one zxid.
    let mut server = server_with(ServerConfig {
        extended_types_enabled: false,
    });
    let before = server.last_zxid();
    for mode in [
        CreateMode::PersistentWithTtl { ttl_ms: 1_000 },
        CreateMode::PersistentSequentialWithTtl { ttl_ms: 1_000 },
    ] {
        assert_eq!(
            create_as(&mut server, A, "/t", mode),
            Err(ZkError::Unimplemented)
        );
    }
    assert_eq!(server.last_zxid(), before + 2);
    create(&mut server, "/c", CreateMode::Container);
}

#[test]
fn a_ttl_outside_one_ms_to_2_pow_40_minus_one_is_bad_arguments() {
    let mut server = server();
    for ttl_ms in [0, -5, MAX_TTL_MS + 1] {
        let mode = CreateMode::PersistentWithTtl { ttl_ms };
        assert_eq!(
            create_as(&mut server, A, "/t", mode),
            Err(ZkError::BadArguments),
            "ttl {ttl_ms}"
        );
    }
    create(
        &mut server,
        "/t1",
        CreateMode::PersistentWithTtl { ttl_ms: 1 },
    );
    create(
        &mut server,
        "/t2",
        CreateMode::PersistentWithTtl { ttl_ms: MAX_TTL_MS },
    );
    assert_eq!(
        create(
            &mut server,
            "/t-",
            CreateMode::PersistentSequentialWithTtl { ttl_ms: 10 }
        ),
        "/t-0000000002"
    );
}

// ---------------------------------------------------------------- watches

#[test]
fn exists_arms_a_data_watch_on_a_missing_node_which_create_fires() {
    let mut server = server();
    assert_eq!(exists_watch(&mut server, B, "/x"), Ok(Reply::Exists(None)));
    let created = run(&mut server, A, create_req(p("/x"), CreateMode::Persistent));
    assert_eq!(
        created.notifications,
        [note(B, EventType::NodeCreated, "/x")]
    );
    assert_eq!(
        created.notifications[0].event.state,
        KeeperState::SyncConnected
    );
}

#[test]
fn exists_on_an_existing_node_arms_a_data_watch() {
    let mut server = server();
    persistent(&mut server, "/x");
    assert!(matches!(
        exists_watch(&mut server, B, "/x"),
        Ok(Reply::Exists(Some(_)))
    ));
    assert_eq!(
        set_data(&mut server, "/x", b"1", ANY_VERSION).notifications,
        [note(B, EventType::NodeDataChanged, "/x")]
    );
}

#[test]
fn get_data_and_get_children_arm_only_on_success() {
    let mut server = server();
    assert_eq!(get_data_watch(&mut server, B, "/x"), Err(ZkError::NoNode));
    assert_eq!(children_watch(&mut server, B, "/x"), Err(ZkError::NoNode));
    assert_eq!(
        run(
            &mut server,
            B,
            Request::GetChildren2 {
                path: p("/x"),
                watch: true
            }
        )
        .result,
        Err(ZkError::NoNode)
    );
    let created = run(&mut server, A, create_req(p("/x"), CreateMode::Persistent));
    assert_eq!(created.notifications, []);
    assert_eq!(
        run(
            &mut server,
            A,
            create_req(p("/x/y"), CreateMode::Persistent)
        )
        .notifications,
        []
    );
}

#[test]
fn create_fires_node_created_and_the_parents_child_watch() {
    let mut server = server();
    persistent(&mut server, "/p");
    exists_watch(&mut server, B, "/p/c").unwrap();
    children_watch(&mut server, C, "/p").unwrap();
    get_data_watch(&mut server, A, "/p").unwrap(); // the parent's data does not change
    let created = run(
        &mut server,
        A,
        create_req(p("/p/c"), CreateMode::Persistent),
    );
    assert_eq!(
        created.notifications,
        [
            note(B, EventType::NodeCreated, "/p/c"),
            note(C, EventType::NodeChildrenChanged, "/p")
        ]
    );
}

#[test]
fn delete_fires_node_deleted_on_data_and_child_watches_then_the_parents_child_watch() {
    let mut server = server();
    persistent(&mut server, "/p");
    persistent(&mut server, "/p/c");
    get_data_watch(&mut server, A, "/p/c").unwrap();
    children_watch(&mut server, B, "/p/c").unwrap();
    exists_watch(&mut server, C, "/p/c").unwrap();
    children_watch(&mut server, C, "/p/c").unwrap(); // C: data + child watch: one event
    children_watch(&mut server, A, "/p").unwrap();
    let deleted = delete(&mut server, "/p/c", ANY_VERSION);
    assert_eq!(
        deleted.notifications,
        [
            note(A, EventType::NodeDeleted, "/p/c"),
            note(B, EventType::NodeDeleted, "/p/c"),
            note(C, EventType::NodeDeleted, "/p/c"),
            note(A, EventType::NodeChildrenChanged, "/p"),
        ]
    );
    // Both of C's watches were consumed.
    assert_eq!(
        run(
            &mut server,
            A,
            create_req(p("/p/c"), CreateMode::Persistent)
        )
        .notifications,
        []
    );
}

#[test]
fn set_data_fires_node_data_changed_on_data_watches_only() {
    let mut server = server();
    persistent(&mut server, "/p");
    persistent(&mut server, "/p/c");
    get_data_watch(&mut server, B, "/p/c").unwrap();
    children_watch(&mut server, C, "/p/c").unwrap();
    children_watch(&mut server, C, "/p").unwrap();
    let set = set_data(&mut server, "/p/c", b"new", ANY_VERSION);
    assert_eq!(
        set.notifications,
        [note(B, EventType::NodeDataChanged, "/p/c")]
    );
}

#[test]
fn watches_are_one_shot() {
    let mut server = server();
    persistent(&mut server, "/x");
    get_data_watch(&mut server, B, "/x").unwrap();
    children_watch(&mut server, B, "/x").unwrap();
    assert_eq!(
        set_data(&mut server, "/x", b"1", ANY_VERSION)
            .notifications
            .len(),
        1
    );
    assert_eq!(
        set_data(&mut server, "/x", b"2", ANY_VERSION).notifications,
        []
    );
    assert_eq!(
        run(
            &mut server,
            A,
            create_req(p("/x/a"), CreateMode::Persistent)
        )
        .notifications
        .len(),
        1
    );
    assert_eq!(
        run(
            &mut server,
            A,
            create_req(p("/x/b"), CreateMode::Persistent)
        )
        .notifications,
        []
    );
}

#[test]
fn one_session_registered_many_times_gets_one_event() {
    let mut server = server();
    persistent(&mut server, "/x");
    exists_watch(&mut server, B, "/x").unwrap();
    get_data_watch(&mut server, B, "/x").unwrap();
    exists_watch(&mut server, B, "/x").unwrap();
    children_watch(&mut server, C, "/x").unwrap();
    children_watch(&mut server, C, "/x").unwrap();
    assert_eq!(
        set_data(&mut server, "/x", b"1", ANY_VERSION).notifications,
        [note(B, EventType::NodeDataChanged, "/x")]
    );
    assert_eq!(
        run(
            &mut server,
            A,
            create_req(p("/x/y"), CreateMode::Persistent)
        )
        .notifications,
        [note(C, EventType::NodeChildrenChanged, "/x")]
    );
}

#[test]
fn notifications_of_one_trigger_are_ordered_by_session_id() {
    let mut server = server();
    for session in [C, A, B] {
        exists_watch(&mut server, session, "/x").unwrap();
    }
    let sessions: Vec<SessionId> = run(&mut server, A, create_req(p("/x"), CreateMode::Persistent))
        .notifications
        .iter()
        .map(|n| n.session)
        .collect();
    assert_eq!(sessions, [A, B, C]);
}

// ---------------------------------------------------------------- sessions

#[test]
fn close_deletes_ephemerals_in_path_order_firing_their_watches() {
    let mut server = server();
    persistent(&mut server, "/p");
    create_as(&mut server, B, "/p/b", CreateMode::Ephemeral).unwrap();
    create_as(&mut server, B, "/p/a", CreateMode::Ephemeral).unwrap();
    create_as(&mut server, C, "/p/c", CreateMode::Ephemeral).unwrap();
    assert_eq!(server.ephemerals_of(B), [p("/p/a"), p("/p/b")]);
    exists_watch(&mut server, A, "/p/a").unwrap();
    exists_watch(&mut server, A, "/p/b").unwrap();
    children_watch(&mut server, C, "/p").unwrap();
    let close_zxid = server.last_zxid() + 1;
    let notifications = server.close_session(B, &mut SortedOrder).unwrap();
    assert_eq!(
        notifications,
        [
            note(A, EventType::NodeDeleted, "/p/a"),
            note(C, EventType::NodeChildrenChanged, "/p"),
            note(A, EventType::NodeDeleted, "/p/b"),
        ]
    );
    // One zxid for the whole close (probed on 3.8.0).
    assert_eq!(server.last_zxid(), close_zxid);
    assert_eq!(stat(&server, "/p").pzxid, close_zxid);
    assert_eq!(server.paths(), [p("/"), p("/p"), p("/p/c")]);
    assert!(server.ephemerals_of(B).is_empty());
    assert!(!server.is_session_alive(B));
}

/// DataTree.killSession walks the session's ephemerals in a HashSet's
/// order, so watchers may see them go in any order: the server deletes
/// them in the order it is given (each permutation for the model, a seeded
/// shuffle in simulations), not always in path order.
#[test]
fn a_closing_session_loses_its_ephemerals_in_the_order_it_is_given() {
    fn deletion_order(order: &mut dyn ChildOrder) -> Vec<String> {
        let mut server = server();
        persistent(&mut server, "/p");
        for name in ["a", "b", "c"] {
            let path = format!("/p/{name}");
            create_as(&mut server, B, &path, CreateMode::Ephemeral).unwrap();
            exists_watch(&mut server, A, &path).unwrap();
        }
        let notifications = server.close_session(B, order).unwrap();
        assert_eq!(server.paths(), [p("/"), p("/p")], "every ephemeral goes");
        notifications
            .iter()
            .map(|n| n.event.path.as_ref().unwrap().as_str().to_string())
            .collect()
    }
    let permutations: BTreeSet<Vec<String>> = (0..6)
        .map(|n| deletion_order(&mut PermutedOrder(n)))
        .collect();
    assert_eq!(
        permutations.len(),
        6,
        "each permutation is one order: {permutations:?}"
    );
    assert_eq!(
        deletion_order(&mut PermutedOrder(0)),
        ["/p/a", "/p/b", "/p/c"]
    );
    use rand::SeedableRng;
    let shuffled: BTreeSet<Vec<String>> = (0..32)
        .map(|seed| {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            deletion_order(&mut zk_sim::server::ShuffledOrder(&mut rng))
        })
        .collect();
    assert!(
        shuffled.len() > 1,
        "seeds give different orders: {shuffled:?}"
    );
}

/// Found by the conformance suite on 3.8.0: killSession deletes the
/// ephemerals before the closing connection's watches are dropped, so the
/// closing session is notified of its own ephemerals' deletion.
#[test]
fn a_closing_session_is_notified_of_its_own_ephemerals() {
    let mut server = server();
    persistent(&mut server, "/p");
    create_as(&mut server, B, "/p/e", CreateMode::Ephemeral).unwrap();
    exists_watch(&mut server, B, "/p/e").unwrap();
    children_watch(&mut server, B, "/p").unwrap();
    let notifications = server.close_session(B, &mut SortedOrder).unwrap();
    assert_eq!(
        notifications,
        [
            note(B, EventType::NodeDeleted, "/p/e"),
            note(B, EventType::NodeChildrenChanged, "/p"),
        ]
    );
}

#[test]
fn a_closed_session_loses_its_watches_and_its_requests_fail_with_session_expired() {
    let mut server = server();
    persistent(&mut server, "/x");
    get_data_watch(&mut server, B, "/x").unwrap();
    server.close_session(B, &mut SortedOrder).unwrap();
    assert_eq!(
        set_data(&mut server, "/x", b"1", ANY_VERSION).notifications,
        []
    );
    for request in [
        Request::Exists {
            path: p("/x"),
            watch: false,
        },
        create_req(p("/y"), CreateMode::Persistent),
    ] {
        let applied = run(&mut server, B, request);
        assert_eq!(
            (applied.result, applied.notifications),
            (Err(ZkError::SessionExpired), vec![])
        );
    }
    assert_eq!(
        server.close_session(B, &mut SortedOrder),
        Err(SessionError::NotAlive(B))
    );
    assert_eq!(
        server.open_session(A, TIMEOUT_MS),
        Err(SessionError::Duplicate(A))
    );
}

#[test]
fn sessions_expire_after_their_timeout_without_a_touch() {
    let mut server = ZkServer::new(ServerConfig::default());
    server.open_session(A, 1_000).unwrap();
    server.open_session(B, 1_000).unwrap();
    server.open_session(C, 5_000).unwrap();
    create_as(&mut server, A, "/a", CreateMode::Ephemeral).unwrap();
    exists_watch(&mut server, C, "/a").unwrap();
    server.set_time_ms(600);
    server.touch_session(B);
    server.set_time_ms(999);
    assert_eq!(
        server.expire_due_sessions(&mut SortedOrder),
        (vec![], vec![])
    );
    server.set_time_ms(1_000);
    assert_eq!(
        server.expire_due_sessions(&mut SortedOrder),
        (vec![A], vec![note(C, EventType::NodeDeleted, "/a")])
    );
    server.set_time_ms(1_599);
    // A request counts as hearing from the session.
    run(&mut server, B, Request::Sync { path: p("/") });
    server.set_time_ms(2_598);
    assert_eq!(server.expire_due_sessions(&mut SortedOrder).0, []);
    server.set_time_ms(5_000);
    assert_eq!(server.expire_due_sessions(&mut SortedOrder).0, [B, C]);
    assert!(server.paths().iter().all(|path| path.is_root()));
}

#[test]
fn disconnect_drops_only_the_sessions_watches() {
    let mut server = server();
    create_as(&mut server, B, "/e", CreateMode::Ephemeral).unwrap();
    persistent(&mut server, "/x");
    get_data_watch(&mut server, B, "/x").unwrap();
    children_watch(&mut server, B, "/x").unwrap();
    get_data_watch(&mut server, C, "/x").unwrap();
    server.disconnect(B);
    assert!(server.is_session_alive(B));
    assert_eq!(server.ephemerals_of(B), [p("/e")]);
    assert_eq!(
        set_data(&mut server, "/x", b"1", ANY_VERSION).notifications,
        [note(C, EventType::NodeDataChanged, "/x")]
    );
    assert_eq!(
        run(
            &mut server,
            A,
            create_req(p("/x/y"), CreateMode::Persistent)
        )
        .notifications,
        []
    );
}

// ---------------------------------------------------------------- set_watches

#[test]
fn set_watches_data_paths_fire_deleted_or_changed_else_rearm() {
    let mut server = server();
    for path in ["/gone", "/changed", "/same"] {
        persistent(&mut server, path);
    }
    let seen = server.last_zxid();
    delete(&mut server, "/gone", ANY_VERSION);
    set_data(&mut server, "/changed", b"1", ANY_VERSION);
    let watches = WatchSet {
        data: vec![p("/gone"), p("/changed"), p("/same")],
        ..WatchSet::default()
    };
    assert_eq!(
        server.set_watches(B, seen, &watches),
        [
            note(B, EventType::NodeDeleted, "/gone"),
            note(B, EventType::NodeDataChanged, "/changed")
        ]
    );
    assert_eq!(
        set_data(&mut server, "/same", b"1", ANY_VERSION).notifications,
        [note(B, EventType::NodeDataChanged, "/same")]
    );
    assert_eq!(
        set_data(&mut server, "/changed", b"2", ANY_VERSION).notifications,
        []
    );
}

#[test]
fn set_watches_exist_paths_fire_created_if_the_node_exists_else_arm() {
    let mut server = server();
    persistent(&mut server, "/old");
    let seen = server.last_zxid();
    let watches = WatchSet {
        exist: vec![p("/old"), p("/later")],
        ..WatchSet::default()
    };
    // NodeCreated even though /old existed before `seen`.
    assert_eq!(
        server.set_watches(B, seen, &watches),
        [note(B, EventType::NodeCreated, "/old")]
    );
    assert_eq!(
        run(
            &mut server,
            A,
            create_req(p("/later"), CreateMode::Persistent)
        )
        .notifications,
        [note(B, EventType::NodeCreated, "/later")]
    );
}

#[test]
fn set_watches_child_paths_fire_deleted_or_children_changed_else_rearm() {
    let mut server = server();
    for path in ["/gone", "/changed", "/same", "/changed/kid"] {
        persistent(&mut server, path);
    }
    let seen = server.last_zxid();
    delete(&mut server, "/gone", ANY_VERSION);
    delete(&mut server, "/changed/kid", ANY_VERSION);
    set_data(
        &mut server,
        "/same",
        b"data changes do not count",
        ANY_VERSION,
    );
    let watches = WatchSet {
        child: vec![p("/gone"), p("/changed"), p("/same")],
        ..WatchSet::default()
    };
    assert_eq!(
        server.set_watches(B, seen, &watches),
        [
            note(B, EventType::NodeDeleted, "/gone"),
            note(B, EventType::NodeChildrenChanged, "/changed")
        ]
    );
    let created = run(
        &mut server,
        A,
        create_req(p("/same/x"), CreateMode::Persistent),
    );
    assert_eq!(
        created.notifications,
        [note(B, EventType::NodeChildrenChanged, "/same")]
    );
}

// ---------------------------------------------------------------- multi

#[test]
fn a_failing_multi_applies_nothing_and_names_the_failing_op() {
    let mut server = server();
    persistent(&mut server, "/p");
    persistent(&mut server, "/p/old");
    exists_watch(&mut server, B, "/m1").unwrap();
    children_watch(&mut server, B, "/p").unwrap();
    get_data_watch(&mut server, C, "/p/old").unwrap();
    let untouched = server.clone();
    let ops = vec![
        MultiOp::Create {
            path: p("/m1"),
            data: vec![],
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        },
        MultiOp::Delete {
            path: p("/p/old"),
            version: ANY_VERSION,
        },
        MultiOp::Create {
            path: prefix("/p/s-"),
            data: vec![],
            mode: CreateMode::PersistentSequential,
            acl: Acls::Open,
        },
        MultiOp::SetData {
            path: p("/p"),
            data: b"x".to_vec(),
            version: 0,
        },
        MultiOp::Check {
            path: p("/p"),
            version: 0,
        }, // the version is 1 by now
        MultiOp::Create {
            path: p("/m2"),
            data: vec![],
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        },
    ];
    let applied = run(&mut server, A, Request::Multi(ops));
    assert_eq!(applied.result, failed(4, ZkError::BadVersion));
    assert_eq!(applied.notifications, []);
    // The failed multi is exactly a failed write: one zxid, nothing else.
    let mut expected = untouched;
    assert!(check(&mut expected, "/nope", 0).is_err());
    assert_eq!(server, expected);
}

#[test]
fn multi_ops_see_earlier_ops_and_sequential_creates_are_consecutive() {
    let mut server = server();
    persistent(&mut server, "/q");
    let seq = MultiOp::Create {
        path: prefix("/q/item-"),
        data: vec![],
        mode: CreateMode::PersistentSequential,
        acl: Acls::Open,
    };
    let ops = vec![
        MultiOp::Create {
            path: p("/a"),
            data: vec![],
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        },
        MultiOp::Create {
            path: p("/a/b"),
            data: vec![],
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        },
        seq.clone(),
        seq,
        MultiOp::SetData {
            path: p("/a/b"),
            data: vec![7],
            version: 0,
        },
        MultiOp::Check {
            path: p("/a/b"),
            version: 1,
        },
        MultiOp::Delete {
            path: p("/a/b"),
            version: 1,
        },
    ];
    let applied = run(&mut server, A, Request::Multi(ops));
    let Ok(Reply::Multi(results)) = applied.result else {
        panic!("{applied:?}")
    };
    let paths: Vec<String> = results
        .iter()
        .filter_map(|r| match r {
            OpResult::Created { path, .. } => Some(path.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        paths,
        ["/a", "/a/b", "/q/item-0000000000", "/q/item-0000000001"]
    );
    assert!(matches!(
        results[4],
        OpResult::DataSet(Stat { version: 1, .. })
    ));
    assert_eq!(results[5..], [OpResult::Checked, OpResult::Deleted]);
    // All ops share one zxid.
    assert_eq!(stat(&server, "/a").czxid, applied.zxid);
    assert_eq!(stat(&server, "/q/item-0000000001").czxid, applied.zxid);
    assert_eq!(
        server.paths(),
        [
            p("/"),
            p("/a"),
            p("/q"),
            p("/q/item-0000000000"),
            p("/q/item-0000000001")
        ]
    );
}

#[test]
fn a_successful_multi_fires_watches_as_if_applied_one_by_one() {
    let mut server = server();
    persistent(&mut server, "/p");
    persistent(&mut server, "/p/x");
    exists_watch(&mut server, B, "/p/new").unwrap();
    children_watch(&mut server, C, "/p").unwrap();
    get_data_watch(&mut server, B, "/p/x").unwrap();
    let ops = vec![
        MultiOp::Create {
            path: p("/p/new"),
            data: vec![],
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        },
        MultiOp::SetData {
            path: p("/p/x"),
            data: vec![1],
            version: ANY_VERSION,
        },
        MultiOp::Delete {
            path: p("/p/x"),
            version: ANY_VERSION,
        },
    ];
    let applied = run(&mut server, A, Request::Multi(ops));
    assert!(applied.result.is_ok());
    assert_eq!(
        applied.notifications,
        [
            note(B, EventType::NodeCreated, "/p/new"),
            note(C, EventType::NodeChildrenChanged, "/p"),
            note(B, EventType::NodeDataChanged, "/p/x"),
        ]
    );
}

#[test]
fn an_empty_multi_succeeds_and_consumes_a_zxid() {
    let mut server = server();
    let before = server.last_zxid();
    let applied = run(&mut server, A, Request::Multi(vec![]));
    assert_eq!(
        (applied.result, applied.zxid),
        (Ok(Reply::Multi(vec![])), before + 1)
    );
}

// ---------------------------------------------------------------- containers and TTL

#[test]
fn containers_are_kept_until_their_first_child_goes() {
    let mut server = server();
    create(&mut server, "/c", CreateMode::Container);
    assert_eq!(server.reap(), []);
    assert!(
        server.stat(&p("/c")).is_some(),
        "a container that never had a child is kept"
    );
    create(&mut server, "/c/kid", CreateMode::EphemeralSequential);
    assert_eq!(server.reap(), []);
    get_data_watch(&mut server, B, "/c").unwrap();
    children_watch(&mut server, C, "/").unwrap();
    delete(&mut server, "/c/kid0000000000", ANY_VERSION);
    let before = server.last_zxid();
    assert_eq!(
        server.reap(),
        [
            note(B, EventType::NodeDeleted, "/c"),
            note(C, EventType::NodeChildrenChanged, "/")
        ]
    );
    assert_eq!(server.last_zxid(), before + 1);
    assert_eq!(server.paths(), [p("/")]);
}

#[test]
fn nested_containers_are_reaped_one_pass_at_a_time() {
    let mut server = server();
    create(&mut server, "/outer", CreateMode::Container);
    create(&mut server, "/outer/inner", CreateMode::Container);
    persistent(&mut server, "/outer/inner/x");
    delete(&mut server, "/outer/inner/x", ANY_VERSION);
    server.reap();
    assert_eq!(server.paths(), [p("/"), p("/outer")]);
    server.reap();
    assert_eq!(server.paths(), [p("/")]);
}

#[test]
fn ttl_nodes_are_reaped_when_childless_and_older_than_their_ttl() {
    let mut server = server();
    create(
        &mut server,
        "/t",
        CreateMode::PersistentWithTtl { ttl_ms: 1_000 },
    );
    create(
        &mut server,
        "/busy",
        CreateMode::PersistentWithTtl { ttl_ms: 1_000 },
    );
    persistent(&mut server, "/busy/kid");
    server.set_time_ms(500);
    set_data(&mut server, "/t", b"refresh", ANY_VERSION); // mtime = 500
    server.set_time_ms(1_500);
    assert_eq!(server.reap(), [], "now - mtime == ttl is not yet over");
    exists_watch(&mut server, B, "/t").unwrap();
    server.set_time_ms(1_501);
    assert_eq!(server.reap(), [note(B, EventType::NodeDeleted, "/t")]);
    assert_eq!(server.paths(), [p("/"), p("/busy"), p("/busy/kid")]);
    delete(&mut server, "/busy/kid", ANY_VERSION);
    server.reap();
    assert_eq!(server.paths(), [p("/")]);
}

// ---------------------------------------------------------------- getChildren and sync

/// Reverses the names: proves the caller's order is what the reply uses.
struct Reversed;

impl ChildOrder for Reversed {
    fn arrange(&mut self, names: &mut [String]) {
        names.sort();
        names.reverse();
    }
}

#[test]
fn get_children_returns_names_in_the_callers_order_and_get_children2_the_stat() {
    let mut server = server();
    persistent(&mut server, "/p");
    for name in ["b", "a", "c"] {
        persistent(&mut server, &format!("/p/{name}"));
    }
    let sorted = names(
        run(
            &mut server,
            A,
            Request::GetChildren {
                path: p("/p"),
                watch: false,
            },
        )
        .result,
    );
    assert_eq!(sorted, ["a", "b", "c"]);
    let reply = server
        .apply(
            A,
            &Request::GetChildren2 {
                path: p("/p"),
                watch: false,
            },
            &mut Reversed,
        )
        .result;
    assert_eq!(
        reply,
        Ok(Reply::Children2 {
            children: vec!["c".into(), "b".into(), "a".into()],
            stat: stat(&server, "/p")
        })
    );
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(7);
    let shuffled = server.apply(
        A,
        &Request::GetChildren {
            path: p("/p"),
            watch: false,
        },
        &mut zk_sim::server::ShuffledOrder(&mut rng),
    );
    assert_eq!(
        names(shuffled.result).into_iter().collect::<BTreeSet<_>>(),
        BTreeSet::from(["a".into(), "b".into(), "c".into()])
    );
}

#[test]
fn sync_answers_its_path_without_a_zxid() {
    let mut server = server();
    let before = server.last_zxid();
    let applied = run(
        &mut server,
        A,
        Request::Sync {
            path: p("/anything"),
        },
    );
    assert_eq!(
        (applied.result, applied.zxid),
        (
            Ok(Reply::Synced {
                path: p("/anything")
            }),
            before
        )
    );
}

#[test]
fn equal_histories_give_equal_servers() {
    let history = |server: &mut ZkServer| {
        persistent(server, "/p");
        create(server, "/p/s-", CreateMode::EphemeralSequential);
        exists_watch(server, B, "/p/x").unwrap();
    };
    let (mut one, mut two) = (server(), server());
    history(&mut one);
    history(&mut two);
    assert_eq!(one, two);
    exists_watch(&mut two, C, "/p/x").unwrap();
    assert_ne!(one, two, "watch tables are part of the state");
}

#[test]
fn permuted_order_enumerates_every_arrangement_once() {
    let mut seen = std::collections::BTreeSet::new();
    for n in 0..6 {
        let mut names: Vec<String> = ["c", "a", "b"].iter().map(|s| s.to_string()).collect();
        PermutedOrder(n).arrange(&mut names);
        seen.insert(names);
    }
    assert_eq!(seen.len(), 6);
    let mut sorted: Vec<String> = ["b", "a"].iter().map(|s| s.to_string()).collect();
    PermutedOrder(0).arrange(&mut sorted);
    assert_eq!(sorted, ["a", "b"]);
}
