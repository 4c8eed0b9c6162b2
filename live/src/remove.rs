//! Removing a run's root from a live server: everything under it,
//! children first, retried while sessions that just closed still hold
//! ephemerals (the end of a run, `crate::run`, and a stale root taken
//! over, `crate::stale`).

use crate::backend::walk_tree;
use crate::LiveSession;
use std::time::{Duration, Instant};
use zk_recipes::zk::{Path, Reply, Request, ZkError};

/// How long removing the root may keep retrying (sessions closing late
/// leave ephemerals for a moment).
const REMOVE_PATIENCE: Duration = Duration::from_secs(30);

/// Deletes `root` and everything under it, retrying while sessions that
/// just closed still hold ephemerals; checks it is gone.
pub(crate) async fn remove_tree(admin: &mut LiveSession, root: &Path) -> Result<(), String> {
    let deadline = Instant::now() + REMOVE_PATIENCE;
    loop {
        match delete_below(admin, root).await {
            Ok(()) => break,
            Err(error) if Instant::now() >= deadline => return Err(error),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    match admin
        .apply(&Request::Exists {
            path: root.clone(),
            watch: false,
        })
        .await
    {
        Ok(Reply::Exists(None)) => Ok(()),
        other => Err(format!("still there after removal: {other:?}")),
    }
}

/// One pass: every node under `root`, children first, then `root`.
async fn delete_below(admin: &mut LiveSession, root: &Path) -> Result<(), String> {
    let order = walk_tree(admin, root).await?;
    for (path, _) in order.iter().rev() {
        let deleted = admin
            .apply(&Request::Delete {
                path: path.clone(),
                version: zk_recipes::zk::ANY_VERSION,
            })
            .await;
        match deleted {
            Ok(_) | Err(ZkError::NoNode) => {}
            Err(error) => return Err(format!("deleting {path}: {error:?}")),
        }
    }
    Ok(())
}
