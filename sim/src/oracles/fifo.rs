//! FIFO fairness: an exclusive hold goes to the oldest contender (`fifo`
//! on a lock or an election; on a queue `fifo` is per-consumer delivery
//! order, judged by the queue check, `queue.rs`).
//!
//! When client `c` acquires, every node in the lock directory that was
//! created before `c`'s own node (smaller creation zxid, which follows the
//! sequence numbers even across the counter's wrap) must belong to `c`'s
//! session. A node of someone else still ahead means `c` jumped the queue.

use super::{fmt_time, ClientIndex, Property, Seen, SimNanos, View, Violation};
use zk_recipes::zk::Path;
use zk_recipes::{Hold, Observation};

pub struct FifoCheck {
    dir: Option<Path>,
}

impl FifoCheck {
    pub fn new(dir: Option<Path>) -> FifoCheck {
        FifoCheck { dir }
    }

    pub fn seen(
        &mut self,
        at: SimNanos,
        client: ClientIndex,
        seen: &Seen,
        view: &View,
    ) -> Option<Violation> {
        let Seen::Outcome(Observation::Acquired {
            hold: Hold::Exclusive,
            ..
        }) = seen
        else {
            return None;
        };
        let dir = self.dir.as_ref()?;
        let session = view.sessions.get(client).copied().flatten()?;
        let children: Vec<(Path, i64, i64)> = view
            .server
            .paths()
            .into_iter()
            .filter(|path| path.parent().as_ref() == Some(dir))
            .filter_map(|path| {
                let stat = view.server.stat(&path)?;
                Some((path, stat.czxid, stat.ephemeral_owner))
            })
            .collect();
        let mine = children
            .iter()
            .filter(|(_, _, owner)| *owner == session.0)
            .map(|(_, czxid, _)| *czxid)
            .min()?;
        let ahead: Vec<&(Path, i64, i64)> = children
            .iter()
            .filter(|(_, czxid, owner)| *czxid < mine && *owner != session.0)
            .collect();
        if ahead.is_empty() {
            return None;
        }
        let owner_name = |owner: i64| {
            view.sessions
                .iter()
                .position(|s| s.map(|s| s.0) == Some(owner))
                .map_or_else(|| format!("session {owner:#x}"), |c| format!("c{c}"))
        };
        let mut events: Vec<String> = ahead
            .iter()
            .map(|(path, czxid, owner)| {
                format!(
                    "{path} (czxid {czxid}) of {} waits ahead",
                    owner_name(*owner)
                )
            })
            .collect();
        events.push(format!(
            "{} c{client}: acquired, its oldest node has czxid {mine}",
            fmt_time(at)
        ));
        Some(Violation {
            property: Property::Fifo,
            at_ns: at,
            message: format!(
                "c{client} acquired while {} older node(s) of other contenders were waiting",
                ahead.len()
            ),
            events,
            diagnosis: None,
            invariant: None,
        })
    }
}
