//! Random scripts for the property test: short sequences of requests,
//! closes and watch flags by three sessions over a small path space, so that
//! requests collide (NodeExists, NotEmpty, BadVersion, ...) and watches fire.
//!
//! TTLs are an hour, so no TTL node expires during a script; containers are
//! reaped at the step that empties them (see `sim_side`).

use super::script::{p, Step};
use proptest::prelude::*;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, MultiOp, Request, ANY_VERSION};

/// Sessions in a random script.
pub const SESSIONS: usize = 3;

const TTL_MS: i64 = 3_600_000;

/// Paths that plain creates make and most requests target, with weights:
/// shallow paths are likelier, so that parents exist often enough for
/// creates, NotEmpty and watches to happen. Sequential names are included so
/// that later steps can hit what sequential creates made.
const NODES: &[(u32, &str)] = &[
    (6, "~/a"),
    (4, "~/b"),
    (4, "~/a/x"),
    (2, "~/a/y"),
    (2, "~/b/x"),
    (1, "~/a/x/z"),
    (2, "~/a/s-0000000000"),
    (1, "~/a/s-0000000001"),
    (1, "~/s-0000000002"),
    (1, "~/b/0000000001"),
];

/// Where sequential creates go.
const PREFIXES: &[&str] = &["~/a/s-", "~/a/s-", "~/s-", "~/b/"];

/// Up to `max_steps` random steps: two creates of the top nodes `~/a` and
/// `~/b` (random sessions and modes), so that most later requests find a
/// parent, then random steps.
pub fn steps(max_steps: usize) -> impl Strategy<Value = Vec<Step>> {
    assert!(max_steps > 2, "room for the two top-node creates");
    let top = |path: &'static str| {
        (0..SESSIONS, top_mode()).prop_map(move |(session, mode)| Step::Apply {
            session,
            request: Request::Create {
                path: p(path),
                data: Vec::new(),
                mode,
                acl: Acls::Open,
            },
        })
    };
    (
        top("~/a"),
        top("~/b"),
        proptest::collection::vec(step(), 1..=max_steps - 2),
    )
        .prop_map(|(a, b, rest)| {
            let mut steps = vec![a, b];
            steps.extend(rest);
            steps
        })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        40 => (0..SESSIONS, request()).prop_map(|(session, request)| Step::Apply { session, request }),
        1 => (0..SESSIONS).prop_map(|session| Step::Close { session }),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        8 => create().prop_map(|op| op.to_request()),
        5 => (node(), version()).prop_map(|(path, version)| Request::Delete { path, version }),
        3 => (readable(), watch()).prop_map(|(path, watch)| Request::Exists { path, watch }),
        3 => (readable(), watch()).prop_map(|(path, watch)| Request::GetData { path, watch }),
        3 => (node(), data(), version()).prop_map(|(path, data, version)| Request::SetData { path, data, version }),
        3 => (readable(), watch()).prop_map(|(path, watch)| Request::GetChildren { path, watch }),
        2 => (readable(), watch()).prop_map(|(path, watch)| Request::GetChildren2 { path, watch }),
        1 => (node(), version()).prop_map(|(path, version)| Request::Check { path, version }),
        2 => proptest::collection::vec(multi_op(), 1..=3).prop_map(Request::Multi),
        1 => readable().prop_map(|path| Request::Sync { path }),
    ]
}

fn multi_op() -> impl Strategy<Value = MultiOp> {
    prop_oneof![
        2 => create(),
        1 => (node(), version()).prop_map(|(path, version)| MultiOp::Delete { path, version }),
        1 => (node(), data(), version()).prop_map(|(path, data, version)| MultiOp::SetData { path, data, version }),
        1 => (node(), version()).prop_map(|(path, version)| MultiOp::Check { path, version }),
    ]
}

/// A create, as a multi op (`to_request` makes it a standalone request).
fn create() -> impl Strategy<Value = MultiOp> {
    let plain = (node(), data(), plain_mode()).prop_map(|(path, data, mode)| MultiOp::Create {
        path,
        data,
        mode,
        acl: Acls::Open,
    });
    let sequential =
        (prefix(), data(), sequential_mode()).prop_map(|(path, data, mode)| MultiOp::Create {
            path,
            data,
            mode,
            acl: Acls::Open,
        });
    prop_oneof![3 => plain, 2 => sequential]
}

fn plain_mode() -> impl Strategy<Value = CreateMode> {
    prop_oneof![
        4 => Just(CreateMode::Persistent),
        3 => Just(CreateMode::Ephemeral),
        2 => Just(CreateMode::Container),
        1 => Just(CreateMode::PersistentWithTtl { ttl_ms: TTL_MS }),
    ]
}

/// Top nodes are mostly parents: rarely ephemeral.
fn top_mode() -> impl Strategy<Value = CreateMode> {
    prop_oneof![
        4 => Just(CreateMode::Persistent),
        3 => Just(CreateMode::Container),
        1 => Just(CreateMode::Ephemeral),
        1 => Just(CreateMode::PersistentWithTtl { ttl_ms: TTL_MS }),
    ]
}

fn sequential_mode() -> impl Strategy<Value = CreateMode> {
    prop_oneof![
        3 => Just(CreateMode::PersistentSequential),
        3 => Just(CreateMode::EphemeralSequential),
        1 => Just(CreateMode::PersistentSequentialWithTtl { ttl_ms: TTL_MS }),
    ]
}

fn node() -> impl Strategy<Value = zk_recipes::zk::Path> {
    let weighted: Vec<_> = NODES
        .iter()
        .map(|(weight, path)| (*weight, Just(p(path))))
        .collect();
    proptest::strategy::Union::new_weighted(weighted)
}

/// A node, or the root placeholder itself.
fn readable() -> impl Strategy<Value = zk_recipes::zk::Path> {
    prop_oneof![8 => node(), 1 => Just(p("~"))]
}

fn prefix() -> impl Strategy<Value = zk_recipes::zk::Path> {
    proptest::sample::select(PREFIXES).prop_map(p)
}

/// Watch flags are set more often than not, so that writes fire them.
fn watch() -> impl Strategy<Value = bool> {
    proptest::bool::weighted(0.7)
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![Just(Vec::new()), Just(vec![1]), Just(vec![1, 2, 3])]
}

fn version() -> impl Strategy<Value = i32> {
    prop_oneof![4 => Just(ANY_VERSION), 3 => Just(0), 1 => Just(1), 1 => Just(2)]
}
