//! ZooKeeper's four-letter commands (`srvr`, `dump`, `cons`, ...): how a test
//! reads a server's own view of itself, of its sessions and connections,
//! instead of inferring it from time. The servers started by
//! `scripts/zk-server` whitelist them all (`4lw.commands.whitelist=*`).

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long a command may take to connect and to answer.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// Sends `word` to the server at `addr` (`host:port`) and returns its whole
/// answer. A command the server does not whitelist is an error.
pub fn four_letter_word(addr: &str, word: &str) -> io::Result<String> {
    let target = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("no address {addr}")))?;
    let mut stream = TcpStream::connect_timeout(&target, COMMAND_TIMEOUT)?;
    stream.set_read_timeout(Some(COMMAND_TIMEOUT))?;
    stream.set_write_timeout(Some(COMMAND_TIMEOUT))?;
    stream.write_all(word.as_bytes())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    if answer.contains("is not executed because it is not in the whitelist") {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{addr}: {}", answer.trim()),
        ));
    }
    Ok(answer)
}

/// The server's mode from `srvr` (`leader`, `follower`, `standalone`,
/// `read-only`, ...); `None` while it does not serve clients.
pub fn server_mode(addr: &str) -> io::Result<Option<String>> {
    let answer = four_letter_word(addr, "srvr")?;
    Ok(answer
        .lines()
        .find_map(|line| line.strip_prefix("Mode: "))
        .map(|mode| mode.trim().to_string()))
}

/// The last zxid the server applied, from `srvr`; `None` while it does not
/// serve clients.
pub fn server_zxid(addr: &str) -> io::Result<Option<i64>> {
    let answer = four_letter_word(addr, "srvr")?;
    Ok(answer
        .lines()
        .find_map(|line| line.strip_prefix("Zxid: 0x"))
        .and_then(|hex| i64::from_str_radix(hex.trim(), 16).ok()))
}

/// Whether the server's session tracker (`dump`) still lists session `id`.
/// Only a standalone server or an ensemble's leader tracks every session.
pub fn tracks_session(addr: &str, id: i64) -> io::Result<bool> {
    let dump = SessionDump::read(addr)?;
    Ok(dump.tracks(id))
}

/// Whether session `id` is gone from the server: its session tracker no
/// longer lists it and its data tree holds no ephemeral of it (`dump`).
/// A 3.8 server drops an expired session from its tracker just before it
/// deletes the session's ephemerals and fires their watches
/// (`ZooKeeperServer.processTxn`: the session events first, then the data
/// tree), so the tracker alone can say "gone" a moment early.
pub fn session_gone(addr: &str, id: i64) -> io::Result<bool> {
    let dump = SessionDump::read(addr)?;
    Ok(!dump.tracks(id) && !dump.holds_ephemerals_of(id))
}

/// `dump`'s answer in its parts: the session tracker's, and the data
/// tree's ephemerals by session (`0x<id>:` then a path a line).
struct SessionDump {
    tracker: String,
    ephemerals: String,
}

impl SessionDump {
    fn read(addr: &str) -> io::Result<SessionDump> {
        let answer = four_letter_word(addr, "dump")?;
        let (tracker, rest) = answer
            .split_once("ephemeral nodes dump:")
            .unwrap_or((answer.as_str(), ""));
        let ephemerals = rest.split("Connections dump:").next().unwrap_or("");
        Ok(SessionDump {
            tracker: tracker.to_string(),
            ephemerals: ephemerals.to_string(),
        })
    }

    fn tracks(&self, id: i64) -> bool {
        let needle = format!("0x{id:x}");
        self.tracker.split_whitespace().any(|word| word == needle)
    }

    fn holds_ephemerals_of(&self, id: i64) -> bool {
        let needle = format!("0x{id:x}:");
        self.ephemerals
            .split_whitespace()
            .any(|word| word == needle)
    }
}

/// Whether the server has a client connection for session `id` (`cons`).
pub fn has_connection_for(addr: &str, id: i64) -> io::Result<bool> {
    let answer = four_letter_word(addr, "cons")?;
    let needle = format!("sid=0x{id:x}");
    Ok(answer
        .split([',', '(', ')', ' ', '\n'])
        .any(|word| word == needle))
}
