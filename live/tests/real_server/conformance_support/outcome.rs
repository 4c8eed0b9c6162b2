//! What a step produced, in a form both servers can agree on: paths under the
//! root placeholder, children as sets, stats without absolute zxids and
//! times (only the relations czxid == mzxid and czxid == pzxid), session ids
//! as session indexes, multi creates by path only (ZOOKEEPER-4026), and each
//! session's events as a sorted list.

use super::script::{placeholder_path, Expect, Script};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use zk_recipes::zk::{
    EventType, KeeperState, OpResult, Path, ReadResult, Reply, SessionId, Stat, WatchedEvent,
    ZkError, ZkResult,
};

/// Who owns a node, as the stat's ephemeral_owner says.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owner {
    Nobody,
    /// The script's session with this index.
    Session(usize),
    /// Container (i64::MIN), TTL (0xFF << 56 | ttl) or an unknown session.
    Raw(i64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormStat {
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    pub num_children: i32,
    pub data_length: i32,
    pub owner: Owner,
    /// No set_data since the create.
    pub czxid_is_mzxid: bool,
    /// No child change since the create.
    pub czxid_is_pzxid: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NormReply {
    Created {
        path: String,
        stat: NormStat,
    },
    Deleted,
    Exists(Option<NormStat>),
    Data {
        data: Vec<u8>,
        stat: NormStat,
    },
    DataSet(NormStat),
    Children(BTreeSet<String>),
    Children2 {
        children: BTreeSet<String>,
        stat: NormStat,
    },
    Checked,
    Multi(Vec<NormOp>),
    Synced {
        path: String,
    },
    WatchAdded,
    MultiRead(Vec<NormRead>),
    /// Sorted: the server keeps a session's ephemerals in a hash set.
    Ephemerals(BTreeSet<String>),
    AllChildrenNumber(u32),
    /// The sans-IO live driver answers ACL requests Unimplemented: the
    /// scripts send none; kept whole should one come.
    Other(String),
}

/// One read's result of a multi-read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NormRead {
    Data { data: Vec<u8>, stat: NormStat },
    Children(BTreeSet<String>),
    Error(ZkError),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NormOp {
    /// The path only: 3.8.0 returns an invalid stat here (ZOOKEEPER-4026).
    Created {
        path: String,
    },
    Deleted,
    DataSet(NormStat),
    Checked,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NormEvent {
    pub event_type: EventType,
    pub state: KeeperState,
    pub path: Option<String>,
}

/// The outcome of one step on one side.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StepOutcome {
    /// The reply of an `Apply` step; `None` for the other steps.
    pub result: Option<Result<NormReply, ZkError>>,
    /// Events each session received during the step (sessions without
    /// events are left out), sorted.
    pub events: BTreeMap<usize, Vec<NormEvent>>,
}

/// Normalizes one side's raw results; knows that side's root and session ids.
pub struct Normalizer<'a> {
    pub root: &'a Path,
    pub session_ids: &'a [SessionId],
}

impl Normalizer<'_> {
    pub fn result(&self, result: &ZkResult) -> Result<NormReply, ZkError> {
        result
            .as_ref()
            .map(|reply| self.reply(reply))
            .map_err(Clone::clone)
    }

    fn reply(&self, reply: &Reply) -> NormReply {
        match reply {
            Reply::Created { path, stat } => NormReply::Created {
                path: self.path(path),
                stat: self.stat(stat),
            },
            Reply::Deleted => NormReply::Deleted,
            Reply::Exists(stat) => NormReply::Exists(stat.as_ref().map(|s| self.stat(s))),
            Reply::Data { data, stat } => NormReply::Data {
                data: data.clone(),
                stat: self.stat(stat),
            },
            Reply::DataSet(stat) => NormReply::DataSet(self.stat(stat)),
            Reply::Children(children) => NormReply::Children(children.iter().cloned().collect()),
            Reply::Children2 { children, stat } => NormReply::Children2 {
                children: children.iter().cloned().collect(),
                stat: self.stat(stat),
            },
            Reply::Checked => NormReply::Checked,
            Reply::Multi(results) => NormReply::Multi(results.iter().map(|r| self.op(r)).collect()),
            Reply::Synced { path } => NormReply::Synced {
                path: self.path(path),
            },
            Reply::WatchAdded => NormReply::WatchAdded,
            Reply::MultiRead(results) => {
                NormReply::MultiRead(results.iter().map(|r| self.read(r)).collect())
            }
            Reply::Ephemerals(paths) => {
                NormReply::Ephemerals(paths.iter().map(|path| self.path(path)).collect())
            }
            Reply::AllChildrenNumber(number) => NormReply::AllChildrenNumber(*number),
            other @ (Reply::Acl { .. }
            | Reply::AclSet(_)
            | Reply::AuthAdded
            | Reply::AuthIds(_)) => NormReply::Other(format!("{other:?}")),
        }
    }

    fn read(&self, result: &ReadResult) -> NormRead {
        match result {
            ReadResult::Data { data, stat } => NormRead::Data {
                data: data.clone(),
                stat: self.stat(stat),
            },
            ReadResult::Children(children) => {
                NormRead::Children(children.iter().cloned().collect())
            }
            ReadResult::Error(error) => NormRead::Error(error.clone()),
        }
    }

    fn op(&self, result: &OpResult) -> NormOp {
        match result {
            OpResult::Created { path, .. } => NormOp::Created {
                path: self.path(path),
            },
            OpResult::Deleted => NormOp::Deleted,
            OpResult::DataSet(stat) => NormOp::DataSet(self.stat(stat)),
            OpResult::Checked => NormOp::Checked,
        }
    }

    pub fn stat(&self, stat: &Stat) -> NormStat {
        NormStat {
            version: stat.version,
            cversion: stat.cversion,
            aversion: stat.aversion,
            num_children: stat.num_children,
            data_length: stat.data_length,
            owner: self.owner(stat.ephemeral_owner),
            czxid_is_mzxid: stat.czxid == stat.mzxid,
            czxid_is_pzxid: stat.czxid == stat.pzxid,
        }
    }

    fn owner(&self, ephemeral_owner: i64) -> Owner {
        if ephemeral_owner == 0 {
            return Owner::Nobody;
        }
        match self
            .session_ids
            .iter()
            .position(|id| id.0 == ephemeral_owner)
        {
            Some(index) => Owner::Session(index),
            None => Owner::Raw(ephemeral_owner),
        }
    }

    fn path(&self, path: &Path) -> String {
        placeholder_path(path.as_str(), self.root)
    }

    pub fn events(&self, events: &[WatchedEvent]) -> Vec<NormEvent> {
        let mut events: Vec<NormEvent> = events
            .iter()
            .map(|event| NormEvent {
                event_type: event.event_type,
                state: event.state,
                path: event.path.as_ref().map(|path| self.path(path)),
            })
            .collect();
        events.sort();
        events
    }
}

/// The first step where the two sides differ, if any.
pub fn first_difference(live: &[StepOutcome], sim: &[StepOutcome]) -> Option<usize> {
    (0..live.len().max(sim.len())).find(|&i| live.get(i) != sim.get(i))
}

/// The expectations of `script` the live outcomes break, described.
pub fn broken_expectations(script: &Script, live: &[StepOutcome]) -> Vec<String> {
    let mut broken = Vec::new();
    for (step, expect) in &script.expects {
        let outcome = &live[*step];
        let holds = match expect {
            Expect::Ok => matches!(outcome.result, Some(Ok(_))),
            Expect::Err(error) => {
                outcome.result.as_ref().and_then(|r| r.as_ref().err()) == Some(error)
            }
            Expect::Exists(present) => {
                matches!(&outcome.result, Some(Ok(NormReply::Exists(stat))) if stat.is_some() == *present)
            }
            Expect::Events { session, count } => {
                outcome.events.get(session).map_or(0, Vec::len) == *count
            }
        };
        if !holds {
            broken.push(format!(
                "step {step} ({}): expected {expect:?}, got {}",
                script.steps[*step],
                brief(outcome)
            ));
        }
    }
    broken
}

/// The failure report: the script, and each step's outcome on both sides,
/// differing steps marked.
pub fn report(script: &Script, roots: &str, live: &[StepOutcome], sim: &[StepOutcome]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "conformance script {:?}: {} sessions, {} steps ({roots})",
        script.name,
        script.sessions,
        script.steps.len()
    );
    for (i, step) in script.steps.iter().enumerate() {
        let (l, s) = (live.get(i), sim.get(i));
        let mark = if l == s { "  " } else { ">>" };
        let _ = writeln!(out, "{mark} {i:>2}. {step}");
        let _ = writeln!(
            out,
            "       live: {}",
            l.map_or("(not run)".to_string(), brief)
        );
        if l != s {
            let _ = writeln!(
                out,
                "       sim:  {}",
                s.map_or("(not run)".to_string(), brief)
            );
        }
    }
    out
}

/// An outcome in one line.
pub fn brief(outcome: &StepOutcome) -> String {
    let mut line = match &outcome.result {
        Some(Ok(reply)) => format!("{reply:?}"),
        Some(Err(error)) => format!("Err({error:?})"),
        None => "-".to_string(),
    };
    for (session, events) in &outcome.events {
        let events: Vec<String> = events
            .iter()
            .map(|e| match &e.path {
                Some(path) => format!("{:?} {path}", e.event_type),
                None => format!("{:?}", e.state),
            })
            .collect();
        let _ = write!(line, " | s{session} events: {}", events.join(", "));
    }
    line
}
