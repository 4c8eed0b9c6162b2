//! Multi: every op or none. Ops run in order against the tree, each seeing
//! the effects of the ones before; on the first failure the applied ones
//! are undone newest first and nothing fires.

use super::shared::Shared;
use super::tree::{Change, DataTree};
use super::writes::{self, WriteContext, WriteOp};
use zk_recipes::zk::{MultiOp, OpResult, ZkError};

/// Applies all `ops` in one transaction; returns their results and the
/// changes whose watches the caller fires, in op order.
pub(crate) fn apply_all(
    tree: &mut Shared<DataTree>,
    ops: &[MultiOp],
    ctx: &mut WriteContext,
) -> Result<(Vec<OpResult>, Vec<Change>), ZkError> {
    let mut results = Vec::with_capacity(ops.len());
    let mut changes = Vec::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        match writes::apply(tree, WriteOp::of_multi_op(op), ctx) {
            Ok((result, change)) => {
                results.push(result);
                changes.extend(change);
            }
            Err(error) => {
                for change in changes.into_iter().rev() {
                    tree.undo(change);
                }
                return Err(ZkError::MultiFailed {
                    index,
                    error: Box::new(error),
                });
            }
        }
    }
    Ok((results, changes))
}
