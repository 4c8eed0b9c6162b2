//! The simulated server's errors as the real crate's [`Error`], and the
//! error of a call the simulation does not cover.

use upstream::Error;
use zk_recipes::zk::ZkError;

/// The real crate's error for a simulated server's (or session layer's)
/// error. A failed multi maps to the error of its failing op (callers that
/// report the index read it from the `ZkError` first).
pub(crate) fn from_zk(error: ZkError) -> Error {
    match error {
        ZkError::NoNode => Error::NoNode,
        ZkError::NodeExists => Error::NodeExists,
        ZkError::NotEmpty => Error::NotEmpty,
        ZkError::BadVersion => Error::BadVersion,
        ZkError::NoChildrenForEphemerals => Error::NoChildrenForEphemerals,
        ZkError::BadArguments => Error::BadArguments(&"server error"),
        ZkError::Unimplemented => Error::Unimplemented,
        ZkError::ConnectionLoss => Error::ConnectionLoss,
        ZkError::SessionExpired => Error::SessionExpired,
        ZkError::OperationTimeout => Error::Timeout,
        ZkError::NoAuth => Error::NoAuth,
        ZkError::InvalidAcl => Error::InvalidAcl,
        ZkError::AuthFailed => Error::AuthFailed,
        // The real crate has no variant for the system error code -2
        // (RuntimeInconsistency): it reports the code.
        ZkError::RuntimeInconsistency => Error::UnexpectedErrorCode(-2),
        ZkError::MultiFailed { error, .. } => from_zk(*error),
    }
}

/// The error of an upstream call zkcheck's simulated client does not cover.
pub(crate) fn uncovered(call: &str) -> Error {
    Error::UnexpectedError(uncovered_text(call))
}

/// What [`uncovered`] says.
pub(crate) fn uncovered_text(call: &str) -> String {
    format!("zkcheck's simulated client does not cover `{call}`")
}

/// The error of a reply that does not answer the request it came for (a
/// simulator bug, reported rather than panicked on).
pub(crate) fn unexpected_reply(call: &str, reply: &zk_recipes::zk::Reply) -> Error {
    Error::UnexpectedError(format!(
        "zkcheck's simulated server answered `{call}` with {reply:?}"
    ))
}
