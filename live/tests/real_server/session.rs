//! Tests of the `LiveSession` adapter itself against a real ZooKeeper: that
//! it rebuilds sequential names, reports a failed multi's index, delivers a
//! notification once however many watches it fires, and that closing a
//! session notifies the watchers of its ephemerals.
//!
//! They need a server: `scripts/zk-server start`, then
//! `cargo test --release --workspace --test real_server -- --ignored session::`.

use std::time::{SystemTime, UNIX_EPOCH};
use zk_live::{zk_addr_from_env, LiveSession};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, MultiOp, OpResult, Path, Reply, Request, WatchedEvent, ZkError,
    ANY_VERSION,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect() -> LiveSession {
    let addr = zk_addr_from_env();
    LiveSession::connect(&addr, 10_000)
        .await
        .unwrap_or_else(|error| {
            panic!(
                "no ZooKeeper answers at {addr} (start one with scripts/zk-server start): {error}"
            )
        })
}

/// A fresh top-level path for one test of this run.
fn fresh_root(test: &str) -> Path {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    Path::new(format!("/live-session-{test}-{millis}")).unwrap()
}

fn at(root: &Path, relative: &str) -> Path {
    Path::sequential_prefix(format!("{root}{relative}")).unwrap()
}

fn create(path: Path, mode: CreateMode) -> Request {
    Request::Create {
        path,
        data: vec![],
        mode,
        acl: Acls::Open,
    }
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored session::"]
fn sequential_names_are_rebuilt() {
    runtime().block_on(async {
        let mut session = connect().await;
        let root = fresh_root("seq");
        session
            .apply(&create(root.clone(), CreateMode::Persistent))
            .await
            .unwrap();
        session
            .apply(&create(at(&root, "/plain"), CreateMode::Persistent))
            .await
            .unwrap();
        let reply = session
            .apply(&create(
                at(&root, "/lock-"),
                CreateMode::EphemeralSequential,
            ))
            .await;
        let Ok(Reply::Created { path, stat }) = reply else {
            panic!("unexpected {reply:?}")
        };
        assert_eq!(
            path,
            at(&root, "/lock-0000000001"),
            "the plain create counts too"
        );
        assert_eq!(stat.ephemeral_owner, session.session_id().0);
        session.close().await.unwrap();
    });
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored session::"]
fn failed_multi_reports_its_index_and_applies_nothing() {
    runtime().block_on(async {
        let mut session = connect().await;
        let root = fresh_root("multi");
        session
            .apply(&create(root.clone(), CreateMode::Persistent))
            .await
            .unwrap();
        let ops = vec![
            MultiOp::Create {
                path: at(&root, "/a"),
                data: vec![],
                mode: CreateMode::Persistent,
                acl: Acls::Open,
            },
            MultiOp::Check {
                path: at(&root, "/a"),
                version: 3,
            },
        ];
        let reply = session.apply(&Request::Multi(ops)).await;
        assert_eq!(
            reply,
            Err(ZkError::MultiFailed {
                index: 1,
                error: Box::new(ZkError::BadVersion)
            })
        );
        let exists = session
            .apply(&Request::Exists {
                path: at(&root, "/a"),
                watch: false,
            })
            .await;
        assert_eq!(exists, Ok(Reply::Exists(None)));
        let ops = vec![
            MultiOp::Create {
                path: at(&root, "/s-"),
                data: vec![],
                mode: CreateMode::PersistentSequential,
                acl: Acls::Open,
            },
            MultiOp::Create {
                path: at(&root, "/s-"),
                data: vec![],
                mode: CreateMode::PersistentSequential,
                acl: Acls::Open,
            },
        ];
        let Ok(Reply::Multi(results)) = session.apply(&Request::Multi(ops)).await else {
            panic!()
        };
        let names: Vec<_> = results
            .iter()
            .map(|result| match result {
                OpResult::Created { path, .. } => path.name().to_string(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(names, ["s-0000000000", "s-0000000001"]);
        let check = session
            .apply(&Request::Check {
                path: at(&root, "/nothing"),
                version: ANY_VERSION,
            })
            .await;
        assert_eq!(check, Err(ZkError::NoNode));
        session.close().await.unwrap();
    });
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored session::"]
fn one_notification_is_one_event_however_many_watches_it_fires() {
    runtime().block_on(async {
        let mut watcher = connect().await;
        let mut writer = connect().await;
        let root = fresh_root("watch");
        let node = at(&root, "/n");
        writer
            .apply(&create(root.clone(), CreateMode::Persistent))
            .await
            .unwrap();
        writer
            .apply(&create(node.clone(), CreateMode::Persistent))
            .await
            .unwrap();
        watcher
            .apply(&Request::Exists {
                path: node.clone(),
                watch: true,
            })
            .await
            .unwrap();
        watcher
            .apply(&Request::GetData {
                path: node.clone(),
                watch: true,
            })
            .await
            .unwrap();
        watcher
            .apply(&Request::GetChildren {
                path: node.clone(),
                watch: true,
            })
            .await
            .unwrap();
        assert_eq!(watcher.armed_watch_count(), 3);
        let set = Request::SetData {
            path: node.clone(),
            data: vec![1],
            version: ANY_VERSION,
        };
        writer.apply(&set).await.unwrap();
        assert_eq!(
            watcher.collect_events().await,
            [WatchedEvent::node(EventType::NodeDataChanged, node.clone())]
        );
        writer.apply(&set).await.unwrap();
        assert_eq!(
            watcher.collect_events().await,
            [],
            "both data watches were one-shot"
        );
        writer
            .apply(&Request::Delete {
                path: node.clone(),
                version: ANY_VERSION,
            })
            .await
            .unwrap();
        assert_eq!(
            watcher.collect_events().await,
            [WatchedEvent::node(EventType::NodeDeleted, node.clone())],
            "the child watch fires on delete, once"
        );
        assert_eq!(watcher.armed_watch_count(), 0);
        watcher.close().await.unwrap();
        writer.close().await.unwrap();
    });
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored session::"]
fn closing_a_session_deletes_its_ephemerals_and_notifies() {
    runtime().block_on(async {
        let mut owner = connect().await;
        let mut watcher = connect().await;
        let root = fresh_root("close");
        let node = at(&root, "/e");
        owner
            .apply(&create(root.clone(), CreateMode::Persistent))
            .await
            .unwrap();
        owner
            .apply(&create(node.clone(), CreateMode::Ephemeral))
            .await
            .unwrap();
        watcher
            .apply(&Request::Exists {
                path: node.clone(),
                watch: true,
            })
            .await
            .unwrap();
        watcher
            .apply(&Request::GetChildren {
                path: root.clone(),
                watch: true,
            })
            .await
            .unwrap();
        owner.close().await.unwrap();
        assert_eq!(
            owner.apply(&Request::Sync { path: root.clone() }).await,
            Err(ZkError::SessionExpired)
        );
        let mut events = watcher.collect_events().await;
        events.sort();
        assert_eq!(
            events,
            [
                WatchedEvent::node(EventType::NodeDeleted, node.clone()),
                WatchedEvent::node(EventType::NodeChildrenChanged, root.clone()),
            ]
        );
        watcher.close().await.unwrap();
    });
}
