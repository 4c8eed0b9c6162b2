//! A proxy that runs out of file descriptors (issue 30, class 3): the
//! accept that fails with EMFILE is recorded as the harness's own failure
//! and retried with a back-off, not in a loop that spins a core and starves
//! the signal handling. No server needed.
//!
//! Its own test binary with one test: it lowers the process's open-file
//! limit, which would break tests running beside it.

use std::fs::File;
use std::net::TcpStream;
use std::time::Duration;
use zk_live::proxy::FaultProxy;

fn soft_limit() -> libc::rlimit {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    limit
}

fn set_limit(limit: &libc::rlimit) {
    // SAFETY: setrlimit reads the struct we own.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, limit) }, 0);
}

/// CPU time this process used so far (user + system).
fn cpu_time() -> Duration {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) }, 0);
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

#[test]
fn a_proxy_out_of_descriptors_records_it_and_does_not_spin() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // Upstream: a port nothing listens on (the connection never gets that far).
    let proxy = runtime
        .block_on(FaultProxy::start("127.0.0.1:9"))
        .expect("the proxy listens");
    assert_eq!(proxy.local_failure(), None);
    let original = soft_limit();
    set_limit(&libc::rlimit {
        rlim_cur: open_descriptors() + 16,
        rlim_max: original.rlim_max,
    });
    // Every descriptor taken but one, which the client's socket takes: the
    // kernel completes its handshake, the proxy's accept finds none left.
    let mut fillers = Vec::new();
    while let Ok(file) = File::open("/dev/null") {
        fillers.push(file);
    }
    fillers.pop();
    let client = TcpStream::connect(proxy.addr()).expect("the client's socket fits");
    std::thread::sleep(Duration::from_millis(300));
    let cpu_before = cpu_time();
    std::thread::sleep(Duration::from_secs(1));
    let cpu_used = cpu_time() - cpu_before;
    let failure = proxy.local_failure();
    drop(client);
    drop(fillers);
    set_limit(&original);
    let failure = failure.expect("the failed accept is recorded");
    assert!(
        failure.contains("accept") && failure.contains("os error 24"),
        "{failure}"
    );
    assert!(
        cpu_used < Duration::from_millis(300),
        "the accept loop spun: {cpu_used:?} of CPU in 1 s"
    );
    // Descriptors back: the proxy accepts again.
    let again = TcpStream::connect(proxy.addr());
    assert!(again.is_ok(), "{again:?}");
    drop(proxy);
}
