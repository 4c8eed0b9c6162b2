//! Memory budgets for the searches (issue 30, class 6): a search stops when
//! the process nears its budget, as it stops at its timeout (not exhaustive,
//! reason "memory"), instead of growing until the allocator aborts.
//!
//! ## The default budget
//!
//! Half of what this process may really use: the smallest of the physical
//! memory, the soft `RLIMIT_AS` and `RLIMIT_DATA`, and the memory limit of
//! its cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`, the process's
//! own group and the namespace's root). Half, so a second process (a build,
//! another check) keeps room, and so the stop point below leaves a third of
//! the limit for what a search allocates after it.
//!
//! ## What is measured
//!
//! The process as the kernel sees it, from `/proc/self/statm`: its resident
//! size, and also its address space when `RLIMIT_AS` is finite and its data
//! size when `RLIMIT_DATA` is finite (those limits count those sizes,
//! reservations the allocator has not touched included). So the figure
//! holds whatever the global allocator (mimalloc in `zkcheck`) keeps.
//!
//! ## Where a search stops
//!
//! At two thirds of the budget ([`MemoryBudget::stop_point_bytes`]). The
//! visited sets and queues grow by doubling: a hash table or a vector that
//! outgrows its buffer allocates one twice as large while the old one still
//! lives. The third kept free lets a structure holding a quarter of what is
//! in use double (its new buffer: half the stop point) while the search
//! notices, stops and narrates what it found, without crossing the budget.
//! The visited sets of the BFS (stateright's, in shards) and of our DFS (256
//! shards) double one shard at a time, far less than that.

use std::fmt;
use std::path::{Path, PathBuf};

/// Bytes in a KiB, MiB, GiB and TiB.
const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

/// A limit above this is "no limit" (cgroup v1 writes 2^63 rounded down to
/// a page).
const UNLIMITED_FROM: u64 = 1 << 62;

/// The most memory a search may have in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBudget {
    bytes: u64,
}

/// A size that `--memory-budget` cannot take.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("`{0}` is not a size: give a whole number and a unit, e.g. 512M or 4G (K, M, G, T: powers of 1024; KiB, MiB, GiB, TiB also taken)")]
    NotASize(String),
    #[error("must be more than 0 bytes")]
    Zero,
    #[error("`{0}` is too large")]
    TooLarge(String),
    #[error(
        "{budget} is more than this process may use ({available}: {limit}); give at most that"
    )]
    OverAvailable {
        budget: Bytes,
        available: Bytes,
        limit: &'static str,
    },
}

impl MemoryBudget {
    /// A budget of `bytes` (at least 1).
    pub fn of_bytes(bytes: u64) -> MemoryBudget {
        assert!(bytes > 0, "a memory budget of 0 bytes");
        MemoryBudget { bytes }
    }

    /// The default: half of what this process may use (see the module
    /// documentation).
    pub fn for_this_process() -> MemoryBudget {
        MemoryBudget::of_bytes((Available::of_this_process().bytes / 2).max(1))
    }

    /// Parses a size as `--memory-budget` takes it (`512M`, `4G`, `4GiB`)
    /// and checks it against what this process may use.
    pub fn parse(text: &str) -> Result<MemoryBudget, BudgetError> {
        let bytes = parse_size(text)?;
        let available = Available::of_this_process();
        if bytes > available.bytes {
            return Err(BudgetError::OverAvailable {
                budget: Bytes(bytes),
                available: Bytes(available.bytes),
                limit: available.source,
            });
        }
        Ok(MemoryBudget::of_bytes(bytes))
    }

    pub fn bytes(self) -> u64 {
        self.bytes
    }

    /// The memory in use at which a search stops: two thirds of the budget.
    pub fn stop_point_bytes(self) -> u64 {
        self.bytes / 3 * 2 + self.bytes % 3 * 2 / 3
    }
}

impl fmt::Display for MemoryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Bytes(self.bytes).fmt(f)
    }
}

/// A number of bytes, shown in the largest binary unit under it: `4.0 GiB`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, name) = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")]
            .into_iter()
            .find(|(unit, _)| self.0 >= *unit)
            .unwrap_or((1, "bytes"));
        if unit == 1 {
            return write!(f, "{} bytes", self.0);
        }
        write!(f, "{:.1} {name}", self.0 as f64 / unit as f64)
    }
}

/// `512M`, `4G`, `4GiB`, `1024K`: a whole number and a binary unit.
fn parse_size(text: &str) -> Result<u64, BudgetError> {
    let not_a_size = || BudgetError::NotASize(text.to_string());
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    if number.is_empty() {
        return Err(not_a_size());
    }
    let scale = match unit {
        "K" | "KiB" => KIB,
        "M" | "MiB" => MIB,
        "G" | "GiB" => GIB,
        "T" | "TiB" => TIB,
        _ => return Err(not_a_size()),
    };
    let number: u64 = number
        .parse()
        .map_err(|_| BudgetError::TooLarge(text.to_string()))?;
    let bytes = number
        .checked_mul(scale)
        .ok_or_else(|| BudgetError::TooLarge(text.to_string()))?;
    if bytes == 0 {
        return Err(BudgetError::Zero);
    }
    Ok(bytes)
}

/// What this process may use, and which limit says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Available {
    pub bytes: u64,
    pub source: &'static str,
}

impl Available {
    /// The smallest of the physical memory, the soft address-space and
    /// data limits, and the cgroup's memory limit.
    pub fn of_this_process() -> Available {
        let limits = Limits::of_this_process();
        let mut available = Available {
            bytes: physical_memory_bytes().unwrap_or(u64::MAX),
            source: "physical memory",
        };
        for (bytes, source) in [
            (limits.address_space, "RLIMIT_AS"),
            (limits.data, "RLIMIT_DATA"),
            (cgroup_limit_bytes(), "the cgroup's memory limit"),
        ] {
            if let Some(bytes) = bytes.filter(|b| *b < available.bytes) {
                available = Available { bytes, source };
            }
        }
        available
    }
}

/// The soft resource limits that bound the allocator (None: unlimited).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Limits {
    address_space: Option<u64>,
    data: Option<u64>,
}

impl Limits {
    fn of_this_process() -> Limits {
        Limits {
            address_space: soft_limit(libc::RLIMIT_AS),
            data: soft_limit(libc::RLIMIT_DATA),
        }
    }
}

#[cfg(target_os = "linux")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_os = "linux"))]
type Resource = libc::c_int;

fn soft_limit(resource: Resource) -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    let status = unsafe { libc::getrlimit(resource, &mut limit) };
    // rlim_t is u64 on Linux, another width elsewhere.
    #[allow(clippy::unnecessary_cast)]
    let bytes = limit.rlim_cur as u64;
    (status == 0 && limit.rlim_cur != libc::RLIM_INFINITY && bytes < UNLIMITED_FROM)
        .then_some(bytes)
}

fn page_size_bytes() -> u64 {
    // SAFETY: sysconf reads a constant of the system.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|s| *s > 0).unwrap_or(4096)
}

fn physical_memory_bytes() -> Option<u64> {
    // SAFETY: sysconf reads a constant of the system.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    u64::try_from(pages)
        .ok()
        .filter(|p| *p > 0)
        .and_then(|pages| pages.checked_mul(page_size_bytes()))
}

/// The smallest memory limit among this process's cgroup files (v2 and v1,
/// at the namespace's root and at the group's own path), if any is set.
fn cgroup_limit_bytes() -> Option<u64> {
    let groups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    cgroup_limit_files(&groups)
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .filter_map(|text| parse_cgroup_limit(&text))
        .min()
}

/// The files that may hold this process's memory limit, given the text of
/// `/proc/self/cgroup` (`0::/path` for v2, `N:memory:/path` for v1).
fn cgroup_limit_files(groups: &str) -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut files = vec![
        root.join("memory.max"),
        root.join("memory/memory.limit_in_bytes"),
    ];
    for line in groups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let relative = path.trim_start_matches('/');
        if relative.is_empty() || relative.split('/').any(|part| part == "..") {
            continue;
        }
        if controllers.is_empty() {
            files.push(root.join(relative).join("memory.max"));
        } else if controllers.split(',').any(|c| c == "memory") {
            files.push(
                root.join("memory")
                    .join(relative)
                    .join("memory.limit_in_bytes"),
            );
        }
    }
    files
}

/// A cgroup limit file's value: None for `max` or a value meaning no limit.
fn parse_cgroup_limit(text: &str) -> Option<u64> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|bytes| *bytes < UNLIMITED_FROM)
}

/// Reads what the process has in use, as the limits in force count it.
#[derive(Clone, Copy, Debug)]
pub struct MemoryGauge {
    page_bytes: u64,
    limits: Limits,
}

impl Default for MemoryGauge {
    fn default() -> Self {
        MemoryGauge::new()
    }
}

impl MemoryGauge {
    pub fn new() -> MemoryGauge {
        MemoryGauge {
            page_bytes: page_size_bytes(),
            limits: Limits::of_this_process(),
        }
    }

    /// The resident size, or the address space or data size where a finite
    /// limit counts those, whichever is largest. None where
    /// `/proc/self/statm` cannot be read.
    pub fn in_use_bytes(&self) -> Option<u64> {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages = Statm::parse(&statm)?;
        let mut in_use = pages.resident;
        if self.limits.address_space.is_some() {
            in_use = in_use.max(pages.size);
        }
        if self.limits.data.is_some() {
            in_use = in_use.max(pages.data);
        }
        in_use.checked_mul(self.page_bytes)
    }
}

/// The fields of `/proc/self/statm` a gauge reads, in pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Statm {
    size: u64,
    resident: u64,
    data: u64,
}

impl Statm {
    /// `size resident shared text lib data dt`.
    fn parse(text: &str) -> Option<Statm> {
        let fields: Vec<u64> = text
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        Some(Statm {
            size: *fields.first()?,
            resident: *fields.get(1)?,
            data: *fields.get(5)?,
        })
    }
}

/// Watches a search's memory against its budget.
#[derive(Clone, Copy, Debug)]
pub struct MemoryWatch {
    pub budget: MemoryBudget,
    gauge: MemoryGauge,
}

/// A search stopped by its memory budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStop {
    pub budget: MemoryBudget,
    /// What was in use when the search stopped.
    pub in_use_bytes: u64,
}

impl fmt::Display for MemoryStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "memory budget of {} reached ({} in use; a third of the budget is kept for a table that doubles)",
            self.budget,
            Bytes(self.in_use_bytes)
        )
    }
}

impl MemoryWatch {
    pub fn new(budget: MemoryBudget) -> MemoryWatch {
        MemoryWatch {
            budget,
            gauge: MemoryGauge::new(),
        }
    }

    /// `Some` when the memory in use has reached the budget's stop point.
    pub fn check(&self) -> Option<MemoryStop> {
        let in_use_bytes = self.gauge.in_use_bytes()?;
        (in_use_bytes >= self.budget.stop_point_bytes()).then_some(MemoryStop {
            budget: self.budget,
            in_use_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_a_whole_number_and_a_binary_unit() {
        assert_eq!(parse_size("4G"), Ok(4 * GIB));
        assert_eq!(parse_size("4GiB"), Ok(4 * GIB));
        assert_eq!(parse_size("512M"), Ok(512 * MIB));
        assert_eq!(parse_size("1024K"), Ok(MIB));
        assert_eq!(parse_size("2T"), Ok(2 * TIB));
    }

    #[test]
    fn sizes_are_parsed_strictly() {
        for bad in [
            "", "4", "G", "4g", "4GB", "4 G", " 4G", "4G ", "-4G", "1.5G", "4Gi", "0x10M", "4G4",
        ] {
            assert_eq!(
                parse_size(bad),
                Err(BudgetError::NotASize(bad.to_string())),
                "{bad:?}"
            );
        }
        assert_eq!(parse_size("0M"), Err(BudgetError::Zero));
        assert!(matches!(
            parse_size("99999999999999999999G"),
            Err(BudgetError::TooLarge(_))
        ));
        assert!(matches!(
            parse_size("17179869184G"),
            Err(BudgetError::TooLarge(_))
        ));
    }

    #[test]
    fn a_budget_over_what_the_process_may_use_is_refused() {
        let available = Available::of_this_process();
        let too_much = format!("{}K", available.bytes / KIB + 1);
        assert!(matches!(
            MemoryBudget::parse(&too_much),
            Err(BudgetError::OverAvailable { .. })
        ));
        assert_eq!(MemoryBudget::parse("1M"), Ok(MemoryBudget::of_bytes(MIB)));
    }

    #[test]
    fn the_default_is_half_of_what_the_process_may_use() {
        let available = Available::of_this_process();
        assert!(available.bytes > 0 && available.bytes < u64::MAX);
        assert_eq!(
            MemoryBudget::for_this_process().bytes(),
            available.bytes / 2
        );
    }

    #[test]
    fn a_search_stops_at_two_thirds_of_its_budget() {
        assert_eq!(MemoryBudget::of_bytes(3 * GIB).stop_point_bytes(), 2 * GIB);
        assert_eq!(MemoryBudget::of_bytes(3).stop_point_bytes(), 2);
        assert_eq!(MemoryBudget::of_bytes(1).stop_point_bytes(), 0);
        assert_eq!(MemoryBudget::of_bytes(5).stop_point_bytes(), 3);
    }

    #[test]
    fn sizes_are_shown_in_binary_units() {
        assert_eq!(Bytes(4 * GIB).to_string(), "4.0 GiB");
        assert_eq!(Bytes(1536 * MIB).to_string(), "1.5 GiB");
        assert_eq!(Bytes(512).to_string(), "512 bytes");
        assert_eq!(Bytes(3 * KIB).to_string(), "3.0 KiB");
    }

    #[test]
    fn the_gauge_sees_memory_the_process_touches() {
        let gauge = MemoryGauge::new();
        let before = gauge.in_use_bytes().expect("/proc/self/statm");
        // black_box: an optimized build would drop a block nothing reads.
        // The gauge reads the whole process, whose other test threads may
        // free memory meanwhile (once, 62 MiB of a 64 MiB block was masked
        // so): the block is 256 MiB, the bound 32 MiB as before.
        let block = std::hint::black_box(vec![1u8; 256 << 20]);
        let after = gauge.in_use_bytes().expect("/proc/self/statm");
        assert!(after >= before + (32 << 20), "{before} -> {after}");
        drop(block);
    }

    #[test]
    fn a_watch_stops_a_search_over_its_budget() {
        let stop = MemoryWatch::new(MemoryBudget::of_bytes(KIB))
            .check()
            .expect("more than 1 KiB is in use");
        assert!(stop.in_use_bytes >= 682);
        assert!(stop
            .to_string()
            .starts_with("memory budget of 1.0 KiB reached ("));
        assert_eq!(
            MemoryWatch::new(MemoryBudget::of_bytes(u64::MAX)).check(),
            None
        );
    }

    #[test]
    fn statm_is_read_by_position() {
        let statm = Statm::parse("1000 200 30 4 0 500 0\n").unwrap();
        assert_eq!(
            statm,
            Statm {
                size: 1000,
                resident: 200,
                data: 500
            }
        );
        assert_eq!(Statm::parse("1 2"), None);
        assert_eq!(Statm::parse("a b c d e f g"), None);
    }

    #[test]
    fn cgroup_files_follow_the_process_group() {
        let files = cgroup_limit_files("4:memory:/jobs/one\n0::/user/two\n1:cpu:/x\n");
        let root = Path::new("/sys/fs/cgroup");
        assert!(files.contains(&root.join("memory/jobs/one/memory.limit_in_bytes")));
        assert!(files.contains(&root.join("user/two/memory.max")));
        assert!(!files.iter().any(|f| f.starts_with(root.join("x"))));
        assert!(cgroup_limit_files("0::/../etc\n")
            .iter()
            .all(|f| !f.to_string_lossy().contains("..")));
        assert_eq!(parse_cgroup_limit("max\n"), None);
        assert_eq!(parse_cgroup_limit("9223372036854771712\n"), None);
        assert_eq!(parse_cgroup_limit("4294967296\n"), Some(4 * GIB));
    }
}
