//! ZooKeeper's error codes (`KeeperException.Code`) as one enum.

use serde::{Deserialize, Serialize};

/// An error a request can end with. The first group comes from the server;
/// `ConnectionLoss` and `SessionExpired` come from the client session layer
/// (the request's effect on the server is then unknown to the client).
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum ZkError {
    #[error("NoNode: the node does not exist")]
    NoNode,
    #[error("NodeExists: the node already exists")]
    NodeExists,
    #[error("NotEmpty: the node has children")]
    NotEmpty,
    #[error("BadVersion: the version does not match")]
    BadVersion,
    #[error("NoChildrenForEphemerals: ephemeral nodes cannot have children")]
    NoChildrenForEphemerals,
    #[error("BadArguments: invalid arguments")]
    BadArguments,
    #[error("Unimplemented: operation not enabled on this server")]
    Unimplemented,
    #[error("NoAuth: not authenticated for this operation on the node")]
    NoAuth,
    #[error("InvalidACL: the ACL is empty or names an invalid id")]
    InvalidAcl,
    #[error("AuthFailed: the server refused the authentication")]
    AuthFailed,
    #[error("RuntimeInconsistency: a multi op after the failing one")]
    RuntimeInconsistency,
    #[error(
        "ConnectionLoss: the connection dropped; the request may or may not have been applied"
    )]
    ConnectionLoss,
    #[error("SessionExpired: the session is gone")]
    SessionExpired,
    #[error("OperationTimeout: the request timed out")]
    OperationTimeout,
    /// A multi failed: no op was applied; `index` is the first failing op.
    #[error("multi failed at op {index}: {error}")]
    MultiFailed { index: usize, error: Box<ZkError> },
}

impl ZkError {
    /// The error itself, or for a failed multi the error of its failing op.
    pub fn root_cause(&self) -> &ZkError {
        match self {
            ZkError::MultiFailed { error, .. } => error.root_cause(),
            other => other,
        }
    }

    /// True for the errors after which the client cannot know whether the
    /// server applied the request.
    pub fn is_connection_error(&self) -> bool {
        matches!(self, ZkError::ConnectionLoss | ZkError::OperationTimeout)
    }
}
