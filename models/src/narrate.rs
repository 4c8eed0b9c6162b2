//! Short human-readable renderings of requests, replies and events for
//! counterexample steps (`create /lock/x-257- ephemeral-sequential ->
//! created /lock/x-257-0000000000`), and the optional step log the model's
//! transition writes them to.

use zk_recipes::zk::{
    CreateMode, EventType, MultiOp, OpResult, ReadOp, ReadResult, Reply, Request, WatchedEvent,
    ZkError, ZkResult,
};

/// Collects the lines describing one step; does nothing when off, so the
/// checker's hot path pays one branch per note.
#[derive(Debug, Default)]
pub struct Narration {
    lines: Option<Vec<String>>,
}

impl Narration {
    pub fn off() -> Self {
        Narration { lines: None }
    }

    pub fn on() -> Self {
        Narration {
            lines: Some(Vec::new()),
        }
    }

    pub fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(lines) = &mut self.lines {
            lines.push(line());
        }
    }

    pub fn into_lines(self) -> Vec<String> {
        self.lines.unwrap_or_default()
    }
}

fn mode(mode: CreateMode) -> String {
    match mode {
        CreateMode::Persistent => "persistent".into(),
        CreateMode::Ephemeral => "ephemeral".into(),
        CreateMode::PersistentSequential => "persistent-sequential".into(),
        CreateMode::EphemeralSequential => "ephemeral-sequential".into(),
        CreateMode::Container => "container".into(),
        CreateMode::PersistentWithTtl { ttl_ms } => format!("ttl({ttl_ms} ms)"),
        CreateMode::PersistentSequentialWithTtl { ttl_ms } => {
            format!("sequential-ttl({ttl_ms} ms)")
        }
    }
}

fn data(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        String::new()
    } else {
        format!(" data={:?}", String::from_utf8_lossy(bytes))
    }
}

fn watch(flag: bool) -> &'static str {
    if flag {
        " watch"
    } else {
        ""
    }
}

fn version(version: i32) -> String {
    if version == zk_recipes::zk::ANY_VERSION {
        String::new()
    } else {
        format!(" version={version}")
    }
}

pub fn request(request: &Request) -> String {
    match request {
        Request::Create {
            path,
            data: d,
            mode: m,
            ..
        } => format!("create {path} {}{}", mode(*m), data(d)),
        Request::Delete { path, version: v } => format!("delete {path}{}", version(*v)),
        Request::Exists { path, watch: w } => format!("exists {path}{}", watch(*w)),
        Request::GetData { path, watch: w } => format!("getData {path}{}", watch(*w)),
        Request::SetData {
            path,
            data: d,
            version: v,
        } => {
            format!("setData {path}{}{}", data(d), version(*v))
        }
        Request::GetChildren { path, watch: w } => format!("getChildren {path}{}", watch(*w)),
        Request::GetChildren2 { path, watch: w } => format!("getChildren2 {path}{}", watch(*w)),
        Request::Check { path, version: v } => format!("check {path}{}", version(*v)),
        Request::Multi(ops) => {
            let ops: Vec<String> = ops.iter().map(multi_op).collect();
            format!("multi [{}]", ops.join("; "))
        }
        Request::Sync { path } => format!("sync {path}"),
        Request::AddWatch { path, mode } => format!("addWatch {path} {mode:?}"),
        Request::GetEphemerals { prefix } => format!("getEphemerals {prefix}"),
        Request::GetAllChildrenNumber { path } => format!("getAllChildrenNumber {path}"),
        Request::GetAcl { path } => format!("getACL {path}"),
        Request::SetAcl {
            path, version: v, ..
        } => format!("setACL {path}{}", version(*v)),
        Request::AddAuth { scheme, .. } => format!("addAuth {scheme}"),
        Request::WhoAmI => "whoAmI".into(),
        Request::MultiRead(reads) => {
            let reads: Vec<String> = reads.iter().map(read_op).collect();
            format!("multiRead [{}]", reads.join("; "))
        }
    }
}

fn read_op(read: &ReadOp) -> String {
    match read {
        ReadOp::GetData { path } => format!("getData {path}"),
        ReadOp::GetChildren { path } => format!("getChildren {path}"),
    }
}

fn multi_op(op: &MultiOp) -> String {
    request(&op.to_request())
}

pub fn result(result: &ZkResult) -> String {
    match result {
        Ok(reply_value) => reply(reply_value),
        Err(error) => error_name(error),
    }
}

fn error_name(error: &ZkError) -> String {
    match error {
        ZkError::MultiFailed { index, error } => {
            format!("multi failed at op {index}: {}", error_name(error))
        }
        other => format!("{other:?}"),
    }
}

fn reply(reply: &Reply) -> String {
    match reply {
        Reply::Created { path, stat } => format!("created {path} (czxid {})", stat.czxid),
        Reply::Deleted => "deleted".into(),
        Reply::Exists(Some(stat)) => format!(
            "exists (czxid {}, owner {})",
            stat.czxid, stat.ephemeral_owner
        ),
        Reply::Exists(None) => "no node".into(),
        Reply::Data { data: d, stat } => format!("data{} (version {})", data(d), stat.version),
        Reply::DataSet(stat) => format!("data set (version {})", stat.version),
        Reply::Children(names) => format!("children [{}]", names.join(", ")),
        Reply::Children2 { children, .. } => format!("children [{}]", children.join(", ")),
        Reply::Checked => "checked".into(),
        Reply::Multi(results) => {
            let results: Vec<String> = results.iter().map(op_result).collect();
            format!("multi ok [{}]", results.join("; "))
        }
        Reply::Synced { path } => format!("synced {path}"),
        Reply::WatchAdded => "watch added".into(),
        Reply::Ephemerals(paths) => {
            let paths: Vec<&str> = paths.iter().map(|path| path.as_str()).collect();
            format!("ephemerals [{}]", paths.join(", "))
        }
        Reply::AllChildrenNumber(number) => format!("{number} descendants"),
        Reply::Acl { stat, .. } => format!("acl (aversion {})", stat.aversion),
        Reply::AclSet(stat) => format!("acl set (aversion {})", stat.aversion),
        Reply::AuthAdded => "authenticated".into(),
        Reply::AuthIds(ids) => {
            let ids: Vec<String> = ids
                .iter()
                .map(|id| format!("{}:{}", id.scheme, id.id))
                .collect();
            format!("authenticated as [{}]", ids.join(", "))
        }
        Reply::MultiRead(results) => {
            let results: Vec<String> = results.iter().map(read_result).collect();
            format!("multiRead [{}]", results.join("; "))
        }
    }
}

fn read_result(result: &ReadResult) -> String {
    match result {
        ReadResult::Data { data: d, stat } => format!("data{} (version {})", data(d), stat.version),
        ReadResult::Children(names) => format!("children [{}]", names.join(", ")),
        ReadResult::Error(error) => format!("{error:?}"),
    }
}

fn op_result(result: &OpResult) -> String {
    match result {
        OpResult::Created { path, .. } => format!("created {path}"),
        OpResult::Deleted => "deleted".into(),
        OpResult::DataSet(stat) => format!("data set (version {})", stat.version),
        OpResult::Checked => "checked".into(),
    }
}

pub fn event(event: &WatchedEvent) -> String {
    match (&event.event_type, &event.path) {
        (EventType::None, _) => format!("state {:?}", event.state),
        (kind, Some(path)) => format!("{kind:?} {path}"),
        (kind, None) => format!("{kind:?}"),
    }
}
