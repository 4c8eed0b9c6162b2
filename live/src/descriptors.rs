//! The file descriptors a live run needs, checked before anything runs.
//!
//! Every client of a live run holds, at its peak, its ZooKeeper connection,
//! its proxy's listener and the proxy's two sockets for that connection,
//! plus, around a fault, a connection being closed while its replacement
//! opens (a cut connection lingers until the client closes its side) and
//! the second connection an expiry makes. On top of that a fixed margin:
//! the runtime (epoll, its wakers, the signal pipe), standard streams, the
//! admin and observer sessions, the set-up session and its proxy.
//! [`descriptors_needed`] counts that; [`ensure_descriptors`] raises the
//! soft `RLIMIT_NOFILE` to the hard limit when the soft one is too low, and
//! refuses the run when even the hard limit is too low. A run that runs
//! out of descriptors half-way would otherwise fail its own sockets and
//! blame the recipe for the clients that never got a session.
//!
//! The figures are measured: `scenarios/lock-fixed.toml` (its faults, 2 to 5
//! cycles) with N clients, the run's `/proc/PID/fd` sampled every 20 ms,
//! peaked at 24 descriptors for 2 clients, 82 for 16, 300 for 64, 561 for
//! 128 and 1,089 for 256: about 4.1 to 4.5 per client plus 15. The budget
//! below adds half again for heavier faults (more cut connections closing
//! at once) and a margin.

use std::io;
use std::sync::{Arc, Mutex};

/// Descriptors one client needs at its peak, with room for the sockets of
/// a fault (a cut connection closing while the client reconnects, an
/// expiry's second connection).
pub const DESCRIPTORS_PER_CLIENT: u64 = 6;
/// Descriptors a run needs whatever its size: standard streams, the tokio
/// runtime, the admin, observer and set-up sessions (the last with its
/// proxy), the preflight's `srvr` connection, and slack.
pub const DESCRIPTORS_FIXED: u64 = 48;

/// About how many file descriptors a live run of `clients` clients needs.
pub fn descriptors_needed(clients: usize) -> u64 {
    DESCRIPTORS_FIXED + DESCRIPTORS_PER_CLIENT * clients as u64
}

/// The process's open-file limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileLimits {
    pub soft: u64,
    /// `u64::MAX` when unlimited.
    pub hard: u64,
}

/// What [`ensure_descriptors`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescriptorBudget {
    /// The soft limit was enough as it was.
    Enough { soft: u64 },
    /// The soft limit was raised from `from` to `to`.
    Raised { from: u64, to: u64 },
}

/// Why a run cannot have the descriptors it needs.
#[derive(Debug, thiserror::Error)]
pub enum DescriptorError {
    #[error("this live run ({clients} clients) needs about {needed} file descriptors, the hard limit is {hard}; raise it with `ulimit -n {needed}` (or run fewer clients)")]
    HardLimitTooLow {
        clients: usize,
        needed: u64,
        hard: u64,
    },
    #[error("cannot read or raise the open-file limit (RLIMIT_NOFILE): {0}")]
    Rlimit(io::Error),
}

/// The open-file limits now.
pub fn file_limits() -> io::Result<FileLimits> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(FileLimits {
        soft: limit_value(limit.rlim_cur),
        hard: limit_value(limit.rlim_max),
    })
}

// `rlim_t` is `u64` on Linux but not everywhere: the casts stay.
#[allow(clippy::unnecessary_cast)]
fn limit_value(raw: libc::rlim_t) -> u64 {
    if raw == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        raw as u64
    }
}

/// Makes sure a run of `clients` clients has the descriptors it needs:
/// nothing to do when the soft limit suffices, the soft limit raised to the
/// hard one when that suffices, else the error naming the number needed.
pub fn ensure_descriptors(clients: usize) -> Result<DescriptorBudget, DescriptorError> {
    let needed = descriptors_needed(clients);
    let limits = file_limits().map_err(DescriptorError::Rlimit)?;
    if limits.soft >= needed {
        return Ok(DescriptorBudget::Enough { soft: limits.soft });
    }
    if limits.hard < needed {
        return Err(DescriptorError::HardLimitTooLow {
            clients,
            needed,
            hard: limits.hard,
        });
    }
    // An unlimited hard limit: Linux still caps the soft one at
    // fs.nr_open, so ask for what is needed rather than "unlimited".
    let target = if limits.hard == u64::MAX {
        needed
    } else {
        limits.hard
    };
    set_soft_limit(target, limits.hard).map_err(DescriptorError::Rlimit)?;
    Ok(DescriptorBudget::Raised {
        from: limits.soft,
        to: target,
    })
}

#[allow(clippy::unnecessary_cast)]
fn set_soft_limit(soft: u64, hard: u64) -> io::Result<()> {
    let raw = |value: u64| {
        if value == u64::MAX {
            libc::RLIM_INFINITY
        } else {
            value as libc::rlim_t
        }
    };
    let limit = libc::rlimit {
        rlim_cur: raw(soft),
        rlim_max: raw(hard),
    };
    // SAFETY: setrlimit reads the struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `error` is this process (or machine) running out of a local
/// resource, descriptors above all: the harness's failure, never the
/// server's or the recipe's.
pub fn is_local_exhaustion(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM | libc::EADDRNOTAVAIL)
    )
}

/// Where the proxies and the backend of one run record the first local
/// resource failure they meet (see [`is_local_exhaustion`]); cheap to clone,
/// every clone shares the record.
#[derive(Clone, Debug, Default)]
pub struct LocalFailure(Arc<Mutex<Option<String>>>);

impl LocalFailure {
    /// Records `error` while trying `what`, if it is a local exhaustion
    /// (the first one is kept). Returns whether it was one.
    pub fn note(&self, what: &str, error: &io::Error) -> bool {
        let local = is_local_exhaustion(error);
        if local {
            let mut failure = self.0.lock().unwrap_or_else(|p| p.into_inner());
            failure.get_or_insert_with(|| format!("could not {what}: {error}"));
        }
        local
    }

    /// After an operation failed without saying why (the client library
    /// reports a failed socket as a lost connection): if the process cannot
    /// open a descriptor now, that was the cause; recorded as a failure to
    /// do `what`.
    pub fn probe(&self, what: &str) -> bool {
        match std::fs::File::open("/dev/null") {
            Ok(_) => false,
            Err(error) => self.note(what, &error),
        }
    }

    /// The first failure recorded, if any.
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_grows_with_the_clients() {
        assert_eq!(descriptors_needed(0), DESCRIPTORS_FIXED);
        assert_eq!(
            descriptors_needed(256) - descriptors_needed(255),
            DESCRIPTORS_PER_CLIENT
        );
        // 256 clients do not fit the usual soft limit of 1024.
        assert!(descriptors_needed(256) > 1024);
    }

    #[test]
    fn the_limits_are_readable_and_a_small_run_fits() {
        let limits = file_limits().unwrap();
        assert!(limits.soft <= limits.hard);
        assert!(matches!(
            ensure_descriptors(1),
            Ok(DescriptorBudget::Enough { .. })
        ));
    }

    #[test]
    fn the_first_local_failure_is_kept_and_shared() {
        let failure = LocalFailure::default();
        let seen_by_another = failure.clone();
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert!(!failure.note("connect", &refused));
        assert_eq!(seen_by_another.get(), None, "a refusal is not local");
        assert!(failure.note("accept", &io::Error::from_raw_os_error(libc::EMFILE)));
        assert!(failure.note("connect", &io::Error::from_raw_os_error(libc::ENFILE)));
        let first = seen_by_another.get().unwrap();
        assert!(first.starts_with("could not accept: "), "{first}");
        assert!(!failure.probe("open"), "descriptors are available here");
    }

    #[test]
    fn exhaustion_is_told_from_other_errors() {
        assert!(is_local_exhaustion(&io::Error::from_raw_os_error(
            libc::EMFILE
        )));
        assert!(!is_local_exhaustion(&io::Error::from_raw_os_error(
            libc::ECONNREFUSED
        )));
        assert!(!is_local_exhaustion(&io::Error::other("no errno")));
    }
}
