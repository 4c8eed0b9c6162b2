//! Before a live run writes anything: is there a ZooKeeper 3.x at the
//! address? Answered with the `srvr` four-letter command (whitelisted by
//! default since 3.5), with bounded timeouts, so a wrong address is an
//! error within seconds, not a hang.

use crate::admin::four_letter_word;
use std::io;
use std::net::ToSocketAddrs;

/// Why a server is not fit for a live run.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error("`{addr}` is not a HOST:PORT address: {reason}")]
    BadAddress { addr: String, reason: String },
    #[error("no server answers at {addr}: {source}")]
    Unreachable { addr: String, source: io::Error },
    #[error("the server at {addr} does not answer `srvr` like ZooKeeper (answer: {answer:?})")]
    NotZooKeeper { addr: String, answer: String },
    #[error("the server at {addr} runs ZooKeeper {version}; zkcheck live needs 3.x")]
    NotVersion3 { addr: String, version: String },
}

/// The server's version (`3.8.0-...`), if it is a ZooKeeper 3.x at `addr`.
pub fn check_server(addr: &str) -> Result<String, PreflightError> {
    let resolved = addr
        .to_socket_addrs()
        .map_err(|error| PreflightError::BadAddress {
            addr: addr.to_string(),
            reason: error.to_string(),
        })?;
    if resolved.count() == 0 {
        return Err(PreflightError::BadAddress {
            addr: addr.to_string(),
            reason: "it resolves to no address".to_string(),
        });
    }
    let answer = four_letter_word(addr, "srvr").map_err(|source| match source.kind() {
        io::ErrorKind::PermissionDenied => PreflightError::NotZooKeeper {
            addr: addr.to_string(),
            answer: source.to_string(),
        },
        _ => PreflightError::Unreachable {
            addr: addr.to_string(),
            source,
        },
    })?;
    let version = server_version(&answer).ok_or_else(|| PreflightError::NotZooKeeper {
        addr: addr.to_string(),
        answer: answer.chars().take(200).collect(),
    })?;
    if !version.starts_with("3.") {
        return Err(PreflightError::NotVersion3 {
            addr: addr.to_string(),
            version,
        });
    }
    Ok(version)
}

/// The version in a `srvr` answer (`Zookeeper version: 3.8.0-..., built on ...`).
fn server_version(srvr: &str) -> Option<String> {
    let line = srvr
        .lines()
        .find_map(|line| line.strip_prefix("Zookeeper version: "))?;
    let version = line.split([',', ' ']).next()?.trim();
    (!version.is_empty()).then(|| version.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_from_srvr() {
        let answer = "Zookeeper version: 3.8.0-debian--1, built on 2023-01-01 00:00 UTC\nLatency min/avg/max: 0/0.0/0\nMode: standalone\n";
        assert_eq!(server_version(answer).as_deref(), Some("3.8.0-debian--1"));
        assert_eq!(server_version("HTTP/1.1 400 Bad Request\r\n"), None);
    }

    #[test]
    fn a_malformed_address_is_refused() {
        assert!(matches!(
            check_server("no-port-here"),
            Err(PreflightError::BadAddress { .. })
        ));
    }

    #[test]
    fn a_closed_port_is_unreachable_at_once() {
        // Bind then drop: the port is (almost certainly) closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = std::time::Instant::now();
        let refused = check_server(&format!("127.0.0.1:{port}"));
        assert!(
            matches!(refused, Err(PreflightError::Unreachable { .. })),
            "{refused:?}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
