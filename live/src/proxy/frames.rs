//! ZooKeeper's wire frames as the proxy sees them (a 4-byte big-endian
//! length, then the body): reading whole frames, the xid that tells a
//! request or reply from a ping, notification or handshake, and the
//! server's connect response, from which the proxy learns the session.

use super::{Direction, LinkSession, Swallowed};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};

/// A server's ConnectResponse (jute): what a client learns at the handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConnectResponse {
    /// `<= 0`: the server refused the session (expired or a wrong password).
    pub timeout_ms: i32,
    pub session_id: i64,
    pub password: Vec<u8>,
}

impl ConnectResponse {
    /// Parses a frame's body (after the length prefix): i32 protocolVersion,
    /// i32 timeOut, i64 sessionId, buffer passwd, optional bool readOnly.
    pub(crate) fn parse(body: &[u8]) -> Option<ConnectResponse> {
        let timeout_ms = i32::from_be_bytes(body.get(4..8)?.try_into().ok()?);
        let session_id = i64::from_be_bytes(body.get(8..16)?.try_into().ok()?);
        let length = i32::from_be_bytes(body.get(16..20)?.try_into().ok()?);
        // A null buffer (length -1) is an empty password.
        let length = usize::try_from(length.max(0)).ok()?;
        let password = body.get(20..20usize.checked_add(length)?)?.to_vec();
        Some(ConnectResponse {
            timeout_ms,
            session_id,
            password,
        })
    }

    /// The session granted, or `None` if the server refused it.
    pub(crate) fn granted(self) -> Option<LinkSession> {
        (self.timeout_ms > 0).then_some(LinkSession {
            session_id: self.session_id,
            password: self.password,
            timeout_ms: self.timeout_ms,
        })
    }
}

/// Largest frame forwarded; ZooKeeper's own limit (jute.maxbuffer) is ~1 MB.
const MAX_FRAME_BYTES: usize = 16 << 20;

/// The xid of a frame other than a handshake (frame 0 of each direction).
pub(super) fn frame_xid(index: u64, frame: &[u8]) -> Option<i32> {
    let xid = frame.get(4..8).filter(|_| index > 0)?;
    Some(i32::from_be_bytes(xid.try_into().ok()?))
}

/// One frame, length prefix included.
pub(crate) async fn read_frame(from: &mut (impl AsyncRead + Unpin)) -> io::Result<Vec<u8>> {
    let mut prefix = [0u8; 4];
    from.read_exact(&mut prefix).await?;
    let length = frame_length(prefix)?;
    let mut frame = vec![0u8; 4 + length];
    frame[..4].copy_from_slice(&prefix);
    from.read_exact(&mut frame[4..]).await?;
    Ok(frame)
}

/// Reads whole frames, keeping a partial one across cancellation (a
/// `select!` that stops waiting loses nothing).
pub(crate) struct FrameReader<R> {
    inner: R,
    buffer: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(inner: R) -> FrameReader<R> {
        FrameReader {
            inner,
            buffer: Vec::new(),
        }
    }

    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    /// The next frame, length prefix included; an error at the end of the
    /// stream or on bytes that are no ZooKeeper frame. Cancel-safe.
    pub(crate) async fn next(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(frame) = self.complete_frame()? {
                return Ok(frame);
            }
            self.buffer.reserve(4096);
            if self.inner.read_buf(&mut self.buffer).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// The first frame of the buffer, if it is all there.
    fn complete_frame(&mut self) -> io::Result<Option<Vec<u8>>> {
        let Some(prefix) = self.buffer.get(..4) else {
            return Ok(None);
        };
        let length = frame_length(prefix.try_into().expect("4 bytes"))?;
        if self.buffer.len() < 4 + length {
            return Ok(None);
        }
        let rest = self.buffer.split_off(4 + length);
        Ok(Some(std::mem::replace(&mut self.buffer, rest)))
    }
}

/// The body length a frame's prefix announces, if it is a ZooKeeper frame's.
fn frame_length(prefix: [u8; 4]) -> io::Result<usize> {
    usize::try_from(i32::from_be_bytes(prefix))
        .ok()
        .filter(|length| *length <= MAX_FRAME_BYTES)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a ZooKeeper frame"))
}

/// Classifies a swallowed frame. Frame 0 of each direction is the connect
/// handshake; every later one starts with its xid.
pub(super) fn count(counts: &mut Swallowed, direction: Direction, index: u64, frame: &[u8]) {
    let xid = match frame.get(4..8) {
        Some(xid) if index > 0 => i32::from_be_bytes(xid.try_into().unwrap()),
        _ => {
            counts.other_frames += 1;
            return;
        }
    };
    match (direction, xid) {
        (Direction::ToServer, xid) if xid > 0 => counts.requests += 1,
        (Direction::ToClient, xid) if xid > 0 => counts.replies += 1,
        (Direction::ToClient, -1) => counts.notifications += 1,
        _ => counts.other_frames += 1,
    }
}
