//! Expiring a client's session behind its back: a raw connection to the
//! server (not through the client's proxy) joins the session with its id
//! and password (sniffed by [`crate::proxy::FaultProxy::session`]) and
//! closes it, so the server ends the session for its owner too.
//!
//! The zookeeper-client crate cannot build a session from an id and a
//! password, hence the raw protocol (jute, each frame a 4-byte big-endian
//! length then the body):
//! - ConnectRequest: i32 protocolVersion, i64 lastZxidSeen, i32 timeOut,
//!   i64 sessionId, buffer passwd, bool readOnly;
//! - ConnectResponse: i32 protocolVersion, i32 timeOut, i64 sessionId,
//!   buffer passwd, bool readOnly (timeOut <= 0: the session is gone);
//! - closeSession: RequestHeader (i32 xid, i32 type -11), answered by a
//!   ReplyHeader (i32 xid, i64 zxid, i32 err).
//!
//! Joining a session closes its owner's connection, and an owner that
//! reconnects at once takes it back and closes ours: closeSession is sent
//! in the same write as the connect request (the server queues it before
//! the owner can get back), and a connection ended early is retried.

use crate::proxy::{read_frame, ConnectResponse, LinkSession};
use std::io;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// What [`expire_session`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takeover {
    /// The server confirmed closing the session.
    Expired,
    /// The server refused to join the session: it had already ended (or
    /// the password was wrong).
    AlreadyGone,
}

/// Why a session could not be expired.
#[derive(Debug, thiserror::Error)]
pub enum TakeoverError {
    #[error("no connection to {server}: {source}")]
    Connect { server: String, source: io::Error },
    #[error("the connection to {server} failed while {step}: {source}")]
    Io {
        server: String,
        step: &'static str,
        source: io::Error,
    },
    #[error("{server} did not answer while {step} within {waited_ms} ms")]
    Timeout {
        server: String,
        step: &'static str,
        waited_ms: u64,
    },
    #[error("{server} sent a malformed {what}")]
    Malformed { server: String, what: &'static str },
    #[error("{server} answered closeSession with error code {err}")]
    CloseRefused { server: String, err: i32 },
    #[error("the session's owner took it back from each of {attempts} connections to {server}")]
    TakenBack { server: String, attempts: u32 },
}

/// How long each step (connect, handshake, close) may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(5);

/// The xid of the closeSession request.
const CLOSE_XID: i32 = 1;

/// ZooKeeper's opcode for closeSession.
const OP_CLOSE_SESSION: i32 = -11;

/// How many connections [`expire_session`] opens before it gives up on a
/// client that keeps taking its session back.
const MAX_ATTEMPTS: u32 = 5;

/// The pause between two attempts.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// How one connection's attempt ended.
enum Attempt {
    Closed,
    Gone,
    /// The server ended our connection before confirming: the owner
    /// reconnected into its session (the server closes the session's older
    /// connection), maybe after our closeSession was queued, maybe before.
    TakenBack,
}

/// Expires `session` at `server` (`host:port`, the server itself, not a
/// proxy): joins it on a connection of its own and closes it.
///
/// Joining the session makes the server close the owner's connection, and
/// an owner that reconnects at once takes the session back (closing ours):
/// so closeSession is sent right behind the connect request, and the
/// takeover is tried again (at most 5 connections) when the server ends
/// our connection before confirming. [`Takeover::AlreadyGone`] only if the
/// first connection found the session gone; a later one finding it gone
/// means an earlier closeSession took effect ([`Takeover::Expired`]).
pub async fn expire_session(
    server: &str,
    session: &LinkSession,
) -> Result<Takeover, TakeoverError> {
    for attempt in 1..=MAX_ATTEMPTS {
        match attempt_once(server, session).await? {
            Attempt::Closed => return Ok(Takeover::Expired),
            Attempt::Gone if attempt == 1 => return Ok(Takeover::AlreadyGone),
            Attempt::Gone => return Ok(Takeover::Expired),
            Attempt::TakenBack => tokio::time::sleep(RETRY_PAUSE).await,
        }
    }
    Err(TakeoverError::TakenBack {
        server: server.to_string(),
        attempts: MAX_ATTEMPTS,
    })
}

/// One connection into the session: connect request and closeSession at
/// once, then their replies.
async fn attempt_once(server: &str, session: &LinkSession) -> Result<Attempt, TakeoverError> {
    let mut stream = within(server, "connecting", TcpStream::connect(server))
        .await?
        .map_err(|source| TakeoverError::Connect {
            server: server.to_string(),
            source,
        })?;
    let _ = stream.set_nodelay(true);
    let attempt = join_and_close(server, &mut stream, session).await;
    let _ = stream.shutdown().await;
    match attempt {
        Err(TakeoverError::Io { source, .. }) if ended_by_server(&source) => Ok(Attempt::TakenBack),
        attempt => attempt,
    }
}

/// An I/O error that means the server closed the connection.
fn ended_by_server(error: &io::Error) -> bool {
    use io::ErrorKind::*;
    matches!(
        error.kind(),
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
    )
}

async fn join_and_close(
    server: &str,
    stream: &mut TcpStream,
    session: &LinkSession,
) -> Result<Attempt, TakeoverError> {
    let mut requests = connect_request(session);
    requests.extend(close_request());
    send(server, stream, "sending the requests", &requests).await?;
    let frame = receive(server, stream, "reading the connect response").await?;
    let response = ConnectResponse::parse(&frame[4..]).ok_or_else(|| TakeoverError::Malformed {
        server: server.to_string(),
        what: "connect response",
    })?;
    if response.timeout_ms <= 0 {
        return Ok(Attempt::Gone);
    }
    let err = close_reply(server, stream).await?;
    if err != 0 {
        return Err(TakeoverError::CloseRefused {
            server: server.to_string(),
            err,
        });
    }
    Ok(Attempt::Closed)
}

/// Reads frames until the reply to closeSession; returns its error code.
/// Pings and notifications (xid < 0) are skipped.
async fn close_reply(server: &str, stream: &mut TcpStream) -> Result<i32, TakeoverError> {
    let read_reply = async {
        loop {
            let frame = read_frame(stream)
                .await
                .map_err(|source| TakeoverError::Io {
                    server: server.to_string(),
                    step: "reading the closeSession reply",
                    source,
                })?;
            if let Some((xid, err)) = reply_header(&frame) {
                if xid == CLOSE_XID {
                    return Ok(err);
                }
            } else {
                return Err(TakeoverError::Malformed {
                    server: server.to_string(),
                    what: "reply header",
                });
            }
        }
    };
    within(server, "reading the closeSession reply", read_reply).await?
}

/// A frame's ReplyHeader: (xid, err).
fn reply_header(frame: &[u8]) -> Option<(i32, i32)> {
    let xid = i32::from_be_bytes(frame.get(4..8)?.try_into().ok()?);
    let err = i32::from_be_bytes(frame.get(16..20)?.try_into().ok()?);
    Some((xid, err))
}

/// The ConnectRequest into `session`, framed.
fn connect_request(session: &LinkSession) -> Vec<u8> {
    let mut body = Vec::with_capacity(29 + session.password.len());
    body.extend(0i32.to_be_bytes()); // protocolVersion
    body.extend(0i64.to_be_bytes()); // lastZxidSeen
    body.extend(session.timeout_ms.to_be_bytes());
    body.extend(session.session_id.to_be_bytes());
    body.extend((session.password.len() as i32).to_be_bytes());
    body.extend(&session.password);
    body.push(0); // readOnly: false
    framed(body)
}

/// The closeSession request, framed.
fn close_request() -> Vec<u8> {
    let mut body = CLOSE_XID.to_be_bytes().to_vec();
    body.extend(OP_CLOSE_SESSION.to_be_bytes());
    framed(body)
}

fn framed(body: Vec<u8>) -> Vec<u8> {
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend(body);
    frame
}

async fn send(
    server: &str,
    stream: &mut TcpStream,
    step: &'static str,
    frame: &[u8],
) -> Result<(), TakeoverError> {
    within(server, step, stream.write_all(frame))
        .await?
        .map_err(|source| TakeoverError::Io {
            server: server.to_string(),
            step,
            source,
        })
}

async fn receive(
    server: &str,
    stream: &mut TcpStream,
    step: &'static str,
) -> Result<Vec<u8>, TakeoverError> {
    within(server, step, read_frame(stream))
        .await?
        .map_err(|source| TakeoverError::Io {
            server: server.to_string(),
            step,
            source,
        })
}

/// `future`, or a timeout error after [`STEP_TIMEOUT`].
async fn within<T>(
    server: &str,
    step: &'static str,
    future: impl std::future::Future<Output = T>,
) -> Result<T, TakeoverError> {
    tokio::time::timeout(STEP_TIMEOUT, future)
        .await
        .map_err(|_| TakeoverError::Timeout {
            server: server.to_string(),
            step,
            waited_ms: STEP_TIMEOUT.as_millis() as u64,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connect_request_follows_the_jute_layout() {
        let session = LinkSession {
            session_id: 0x0102_0304_0506_0708,
            password: vec![9, 9],
            timeout_ms: 4_000,
        };
        let frame = connect_request(&session);
        let mut expected = 31i32.to_be_bytes().to_vec();
        expected.extend([0; 4]);
        expected.extend([0; 8]);
        expected.extend(4_000i32.to_be_bytes());
        expected.extend([1, 2, 3, 4, 5, 6, 7, 8]);
        expected.extend(2i32.to_be_bytes());
        expected.extend([9, 9, 0]);
        assert_eq!(frame, expected);
    }

    #[test]
    fn close_session_is_xid_1_type_minus_11() {
        let mut expected = 8i32.to_be_bytes().to_vec();
        expected.extend(1i32.to_be_bytes());
        expected.extend((-11i32).to_be_bytes());
        assert_eq!(close_request(), expected);
    }

    #[test]
    fn a_short_reply_header_is_malformed() {
        assert_eq!(reply_header(&[0, 0, 0, 4, 0, 0, 0, 1]), None);
        let mut reply = 16i32.to_be_bytes().to_vec();
        reply.extend(1i32.to_be_bytes());
        reply.extend(7i64.to_be_bytes());
        reply.extend((-112i32).to_be_bytes());
        assert_eq!(reply_header(&reply), Some((1, -112)));
    }
}
