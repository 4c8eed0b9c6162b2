//! A conformance script: the steps several sessions take, written against a
//! placeholder root `/~` that each run replaces with a fresh top-level node,
//! plus optional expectations that keep a hand-written case from passing
//! vacuously (both sides answering NoNode to a mistyped path, say).

use std::fmt;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, MultiOp, Path, ReadOp, Request, ZkError, ANY_VERSION};

/// The placeholder for the run's root node in scripts and normalized outcomes.
pub const ROOT: &str = "/~";

/// One step of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Session `session` sends `request`.
    Apply { session: usize, request: Request },
    /// Session `session` closes: its ephemerals go, their watchers hear it.
    Close { session: usize },
    /// Real time passes on the live side (the server reaps containers and
    /// TTL nodes on its own); the sim's clock advances as much and it reaps.
    Wait { ms: u64 },
}

/// What a hand-written case insists the real server answered at a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Any success.
    Ok,
    Err(ZkError),
    /// Session `session` received exactly `count` events at this step.
    Events {
        session: usize,
        count: usize,
    },
    /// An `exists` found the node (true) or found none (false).
    Exists(bool),
}

/// A named sequence of steps over `sessions` sessions.
#[derive(Clone, Debug)]
pub struct Script {
    pub name: String,
    pub sessions: usize,
    pub steps: Vec<Step>,
    /// (step index, expectation on the live outcome of that step)
    pub expects: Vec<(usize, Expect)>,
}

impl Script {
    pub fn new(name: &str, sessions: usize) -> Script {
        Script {
            name: name.to_string(),
            sessions,
            steps: Vec::new(),
            expects: Vec::new(),
        }
    }

    /// Session `session` sends `request`.
    pub fn on(mut self, session: usize, request: Request) -> Script {
        assert!(
            session < self.sessions,
            "session {session} of {}",
            self.sessions
        );
        self.steps.push(Step::Apply { session, request });
        self
    }

    pub fn close(mut self, session: usize) -> Script {
        assert!(
            session < self.sessions,
            "session {session} of {}",
            self.sessions
        );
        self.steps.push(Step::Close { session });
        self
    }

    pub fn wait_ms(mut self, ms: u64) -> Script {
        self.steps.push(Step::Wait { ms });
        self
    }

    /// The last step must succeed.
    pub fn ok(self) -> Script {
        self.expect(Expect::Ok)
    }

    /// The last step must fail with `error`.
    pub fn err(self, error: ZkError) -> Script {
        self.expect(Expect::Err(error))
    }

    /// The last step must fail as a multi at `index` with `error`.
    pub fn multi_err(self, index: usize, error: ZkError) -> Script {
        self.expect(Expect::Err(ZkError::MultiFailed {
            index,
            error: Box::new(error),
        }))
    }

    /// The last step, an `exists`, must find the node.
    pub fn present(self) -> Script {
        self.expect(Expect::Exists(true))
    }

    /// The last step, an `exists`, must find no node.
    pub fn absent(self) -> Script {
        self.expect(Expect::Exists(false))
    }

    /// Session `session` must receive `count` events at the last step.
    pub fn events(self, session: usize, count: usize) -> Script {
        self.expect(Expect::Events { session, count })
    }

    fn expect(mut self, expect: Expect) -> Script {
        let step = self
            .steps
            .len()
            .checked_sub(1)
            .expect("an expectation follows a step");
        self.expects.push((step, expect));
        self
    }
}

/// A script path: `~/a/b` or `~` (the root placeholder).
pub fn p(relative: &str) -> Path {
    let tail = relative
        .strip_prefix('~')
        .unwrap_or_else(|| panic!("script paths start with '~': {relative}"));
    Path::sequential_prefix(format!("{ROOT}{tail}"))
        .unwrap_or_else(|error| panic!("{relative}: {error}"))
}

pub fn multi_read(reads: Vec<ReadOp>) -> Request {
    Request::MultiRead(reads)
}

pub fn read_data(path: &str) -> ReadOp {
    ReadOp::GetData { path: p(path) }
}

pub fn read_children(path: &str) -> ReadOp {
    ReadOp::GetChildren { path: p(path) }
}

pub fn ephemerals(prefix: &str) -> Request {
    Request::GetEphemerals { prefix: p(prefix) }
}

pub fn descendants(path: &str) -> Request {
    Request::GetAllChildrenNumber { path: p(path) }
}

pub fn create(path: &str, data: &[u8], mode: CreateMode) -> Request {
    Request::Create {
        path: p(path),
        data: data.to_vec(),
        mode,
        acl: Acls::Open,
    }
}

pub fn persistent(path: &str) -> Request {
    create(path, b"", CreateMode::Persistent)
}

pub fn delete(path: &str, version: i32) -> Request {
    Request::Delete {
        path: p(path),
        version,
    }
}

pub fn delete_any(path: &str) -> Request {
    delete(path, ANY_VERSION)
}

pub fn exists(path: &str, watch: bool) -> Request {
    Request::Exists {
        path: p(path),
        watch,
    }
}

pub fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData {
        path: p(path),
        watch,
    }
}

pub fn set_data(path: &str, data: &[u8], version: i32) -> Request {
    Request::SetData {
        path: p(path),
        data: data.to_vec(),
        version,
    }
}

pub fn get_children(path: &str, watch: bool) -> Request {
    Request::GetChildren {
        path: p(path),
        watch,
    }
}

pub fn get_children2(path: &str, watch: bool) -> Request {
    Request::GetChildren2 {
        path: p(path),
        watch,
    }
}

pub fn check(path: &str, version: i32) -> Request {
    Request::Check {
        path: p(path),
        version,
    }
}

pub fn sync(path: &str) -> Request {
    Request::Sync { path: p(path) }
}

pub fn multi(ops: Vec<MultiOp>) -> Request {
    Request::Multi(ops)
}

pub fn op_create(path: &str, mode: CreateMode) -> MultiOp {
    MultiOp::Create {
        path: p(path),
        data: Vec::new(),
        mode,
        acl: Acls::Open,
    }
}

pub fn op_delete(path: &str, version: i32) -> MultiOp {
    MultiOp::Delete {
        path: p(path),
        version,
    }
}

pub fn op_set_data(path: &str, data: &[u8], version: i32) -> MultiOp {
    MultiOp::SetData {
        path: p(path),
        data: data.to_vec(),
        version,
    }
}

pub fn op_check(path: &str, version: i32) -> MultiOp {
    MultiOp::Check {
        path: p(path),
        version,
    }
}

/// The request with every `/~` prefix replaced by `root`.
pub fn rebase(request: &Request, root: &Path) -> Request {
    let r = |path: &Path| rebase_path(path, root);
    match request.clone() {
        Request::Create {
            path,
            data,
            mode,
            acl,
        } => Request::Create {
            path: r(&path),
            data,
            mode,
            acl,
        },
        Request::Delete { path, version } => Request::Delete {
            path: r(&path),
            version,
        },
        Request::Exists { path, watch } => Request::Exists {
            path: r(&path),
            watch,
        },
        Request::GetData { path, watch } => Request::GetData {
            path: r(&path),
            watch,
        },
        Request::SetData {
            path,
            data,
            version,
        } => Request::SetData {
            path: r(&path),
            data,
            version,
        },
        Request::GetChildren { path, watch } => Request::GetChildren {
            path: r(&path),
            watch,
        },
        Request::GetChildren2 { path, watch } => Request::GetChildren2 {
            path: r(&path),
            watch,
        },
        Request::Check { path, version } => Request::Check {
            path: r(&path),
            version,
        },
        Request::Sync { path } => Request::Sync { path: r(&path) },
        Request::AddWatch { path, mode } => Request::AddWatch {
            path: r(&path),
            mode,
        },
        Request::Multi(ops) => Request::Multi(ops.iter().map(|op| rebase_op(op, root)).collect()),
        Request::MultiRead(reads) => Request::MultiRead(
            reads
                .iter()
                .map(|read| match read {
                    ReadOp::GetData { path } => ReadOp::GetData { path: r(path) },
                    ReadOp::GetChildren { path } => ReadOp::GetChildren { path: r(path) },
                })
                .collect(),
        ),
        Request::GetEphemerals { prefix } => Request::GetEphemerals { prefix: r(&prefix) },
        Request::GetAllChildrenNumber { path } => Request::GetAllChildrenNumber { path: r(&path) },
        Request::GetAcl { path } => Request::GetAcl { path: r(&path) },
        Request::SetAcl { path, acl, version } => Request::SetAcl {
            path: r(&path),
            acl,
            version,
        },
        other @ (Request::AddAuth { .. } | Request::WhoAmI) => other,
    }
}

fn rebase_op(op: &MultiOp, root: &Path) -> MultiOp {
    let r = |path: &Path| rebase_path(path, root);
    match op.clone() {
        MultiOp::Create {
            path,
            data,
            mode,
            acl,
        } => MultiOp::Create {
            path: r(&path),
            data,
            mode,
            acl,
        },
        MultiOp::Delete { path, version } => MultiOp::Delete {
            path: r(&path),
            version,
        },
        MultiOp::SetData {
            path,
            data,
            version,
        } => MultiOp::SetData {
            path: r(&path),
            data,
            version,
        },
        MultiOp::Check { path, version } => MultiOp::Check {
            path: r(&path),
            version,
        },
    }
}

fn rebase_path(path: &Path, root: &Path) -> Path {
    let tail = path
        .as_str()
        .strip_prefix(ROOT)
        .expect("script paths are under the root placeholder");
    Path::sequential_prefix(format!("{root}{tail}")).expect("a rebased valid path is valid")
}

/// A real path under `root` written back with the placeholder (`/~/a`);
/// paths outside the root stay as they are.
pub fn placeholder_path(path: &str, root: &Path) -> String {
    match path.strip_prefix(root.as_str()) {
        Some(tail) if tail.is_empty() || tail.starts_with('/') => format!("{ROOT}{tail}"),
        _ => path.to_string(),
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Apply { session, request } => write!(f, "s{session} {}", Brief(request)),
            Step::Close { session } => write!(f, "s{session} close"),
            Step::Wait { ms } => write!(f, "wait {ms} ms"),
        }
    }
}

/// A request in one short line.
pub struct Brief<'a>(pub &'a Request);

impl fmt::Display for Brief<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let watch = |w: &bool| if *w { " watch" } else { "" };
        match self.0 {
            Request::Create {
                path, data, mode, ..
            } => write!(f, "create {path} {data:?} {mode:?}"),
            Request::Delete { path, version } => write!(f, "delete {path} v{version}"),
            Request::Exists { path, watch: w } => write!(f, "exists {path}{}", watch(w)),
            Request::GetData { path, watch: w } => write!(f, "getData {path}{}", watch(w)),
            Request::SetData {
                path,
                data,
                version,
            } => write!(f, "setData {path} {data:?} v{version}"),
            Request::GetChildren { path, watch: w } => write!(f, "getChildren {path}{}", watch(w)),
            Request::GetChildren2 { path, watch: w } => {
                write!(f, "getChildren2 {path}{}", watch(w))
            }
            Request::Check { path, version } => write!(f, "check {path} v{version}"),
            Request::Sync { path } => write!(f, "sync {path}"),
            Request::AddWatch { path, mode } => write!(f, "addWatch {path} {mode:?}"),
            Request::Multi(ops) => {
                let ops: Vec<String> = ops
                    .iter()
                    .map(|op| Brief(&op.to_request()).to_string())
                    .collect();
                write!(f, "multi [{}]", ops.join("; "))
            }
            Request::MultiRead(reads) => {
                let reads: Vec<String> = reads
                    .iter()
                    .map(|read| match read {
                        ReadOp::GetData { path } => format!("getData {path}"),
                        ReadOp::GetChildren { path } => format!("getChildren {path}"),
                    })
                    .collect();
                write!(f, "multiRead [{}]", reads.join("; "))
            }
            Request::GetEphemerals { prefix } => write!(f, "getEphemerals {prefix}"),
            Request::GetAllChildrenNumber { path } => write!(f, "getAllChildrenNumber {path}"),
            Request::GetAcl { path } => write!(f, "getACL {path}"),
            Request::SetAcl { path, version, .. } => write!(f, "setACL {path} v{version}"),
            Request::AddAuth { scheme, .. } => write!(f, "addAuth {scheme}"),
            Request::WhoAmI => write!(f, "whoAmI"),
        }
    }
}
