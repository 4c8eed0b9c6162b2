//! The simulated side: zkcheck's `zookeeper-client` (this crate under
//! `--cfg madsim`) in a simulated world of one server and two clients:
//! client 0's workload is the sequence, client 1 only lends its session as
//! `Env::other()` until the sequence is done.
//!
//! Faults are the run's schedule, placed where the sequence's steps are: at
//! [`FAULT_AT_MS`] of simulated time, client 0's next request loses its
//! reply or is lost itself (`lose_reply` / `lose_request`, the connection
//! then down for [`DOWN_MS`]), or its session expires. The sequence reaches
//! that point long before (it checks) and waits until just after it.

use super::{Sequence, Transcript};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zk_sim::async_recipe::{ApiRecipe, Bridge};
use zk_sim::faults::{Fault, FaultPlan, ScheduledFault, Trigger};
use zk_sim::world::{Client as SimClient, Simulation, WorldConfig};

/// When the sequence's fault strikes.
pub const FAULT_AT_MS: u64 = 1_000;
/// How long reconnecting fails after a loss.
pub const DOWN_MS: u64 = 2_000;
/// When the idle-silence sequence's silence begins (its client's last
/// request goes out `timing_sequences::IDLE_MS` before).
pub const SILENCE_AT_MS: u64 = 3_000;
/// How often client 1 looks whether the sequence is done, and client 0
/// whether client 1 is connected (simulated ms).
const POLL_MS: u64 = 5;

mod sequences {
    use super::Env;
    crate::conformance_support::sequences::define_sequences!(zkcheck_zookeeper_client);
    crate::conformance_support::lock_sequences::define_lock_sequences!(zkcheck_zookeeper_client);
    crate::conformance_support::persistent_sequences::define_persistent_sequences!(
        zkcheck_zookeeper_client
    );
    crate::conformance_support::acl_sequences::define_acl_sequences!(zkcheck_zookeeper_client);
    crate::conformance_support::timing_sequences::define_timing_sequences!(
        zkcheck_zookeeper_client
    );
}

/// The faults of `sequence`'s run.
fn faults(sequence: Sequence) -> Vec<ScheduledFault> {
    let fault = match sequence {
        Sequence::LossAfterApply
        | Sequence::LockLossAfterApply
        | Sequence::LockCustomLoss
        | Sequence::LockCancelledLoss
        | Sequence::MoreReadsLoss => Fault::LoseReply { down_ms: DOWN_MS },
        Sequence::LossBeforeApply
        | Sequence::LockLossBeforeApply
        | Sequence::PersistentLoss
        | Sequence::AclLoss => Fault::LoseRequest { down_ms: DOWN_MS },
        Sequence::Expiry
        | Sequence::LockExpiry
        | Sequence::PersistentExpiry
        | Sequence::MoreReadsExpiry
        | Sequence::AclExpiry => Fault::Expire,
        Sequence::IdleSilence => {
            return vec![ScheduledFault {
                trigger: Trigger::AtMs(SILENCE_AT_MS as f64),
                client: 0,
                fault: Fault::Silent {
                    down_ms: super::timing_sequences::SILENCE_MS,
                },
            }]
        }
        _ => return Vec::new(),
    };
    vec![ScheduledFault {
        trigger: Trigger::AtMs(FAULT_AT_MS as f64),
        client: 0,
        fault,
    }]
}

/// The root the sequences run under (the simulated server is fresh).
fn root(sequence: Sequence) -> String {
    format!("/zkcheck-client-conformance-{}", sequence.name())
}

/// Runs `sequence` in a simulated world with `seed`; `ttl_enabled` says
/// whether the TTL steps run (as the real server allows).
pub fn run(sequence: Sequence, seed: u64, ttl_enabled: bool) -> Transcript {
    let config = WorldConfig {
        clients: 2,
        extended_types: ttl_enabled,
        faults: FaultPlan::scheduled(faults(sequence)),
        // The crate's default session timeout, which the real side's
        // client asks for (only the timing sequence depends on it).
        session_timeout_ms: match sequence {
            Sequence::IdleSilence => 6_000,
            _ => WorldConfig::default().session_timeout_ms,
        },
        ..WorldConfig::default()
    };
    let transcript: Arc<Mutex<Option<Transcript>>> = Arc::default();
    let shared = Shared {
        transcript: transcript.clone(),
        other: Arc::default(),
    };
    let simulation = Simulation::new(
        config,
        |_, _| ApiRecipe::default(),
        move |client: SimClient<ApiRecipe>| {
            let shared = shared.clone();
            async move {
                let _bridge = Bridge::start(client.clone());
                if client.index() == 0 {
                    run_sequence(sequence, ttl_enabled, client, &shared).await;
                } else {
                    lend_session(client, &shared).await;
                }
            }
        },
    );
    let report = simulation.run(seed);
    let done = transcript.lock().expect("transcript").take();
    done.unwrap_or_else(|| {
        panic!(
            "sim side: the run of {} (seed {seed}) ended before the sequence did: {:?}",
            sequence.name(),
            report.violations
        )
    })
}

/// What the two clients' workloads share.
#[derive(Clone)]
struct Shared {
    transcript: Arc<Mutex<Option<Transcript>>>,
    /// Client 1's session, once connected.
    other: Arc<Mutex<Option<zkcheck_zookeeper_client::Client>>>,
}

/// Client 0: waits for client 1's session, runs the sequence.
async fn run_sequence(
    sequence: Sequence,
    ttl_enabled: bool,
    app: SimClient<ApiRecipe>,
    shared: &Shared,
) {
    let other = loop {
        if let Some(other) = shared.other.lock().expect("other").clone() {
            break other;
        }
        app.sleep_ms(POLL_MS).await;
    };
    let env = Env {
        root: root(sequence),
        ttl_enabled,
        app,
        other,
    };
    let done = sequences::run(sequence, &env).await;
    *shared.transcript.lock().expect("transcript") = Some(done);
}

/// Client 1: connects, hands its session over, waits until the sequence
/// is done.
async fn lend_session(app: SimClient<ApiRecipe>, shared: &Shared) {
    let other = zkcheck_zookeeper_client::Client::connect("sim")
        .await
        .expect("sim side: client 1 connects");
    *shared.other.lock().expect("other") = Some(other);
    while shared.transcript.lock().expect("transcript").is_none() {
        app.sleep_ms(POLL_MS).await;
    }
}

/// What the sequences need of the simulated side (see `sequences`).
pub struct Env {
    root: String,
    ttl_enabled: bool,
    app: SimClient<ApiRecipe>,
    other: zkcheck_zookeeper_client::Client,
}

impl Env {
    pub fn connect_string(&self) -> &str {
        "sim"
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    pub fn ttl_enabled(&self) -> bool {
        self.ttl_enabled
    }

    pub async fn within<F: Future>(&self, ms: u64, future: F) -> Option<F::Output> {
        madsim::time::timeout(Duration::from_millis(ms), future)
            .await
            .ok()
    }

    /// A second client's session.
    pub fn other(&self) -> &zkcheck_zookeeper_client::Client {
        &self.other
    }

    /// The schedule loses the reply of the next request after
    /// [`FAULT_AT_MS`]: waits until then.
    pub async fn arm_reply_loss(&self) {
        self.wait_for_the_fault().await;
    }

    /// The schedule loses the next request after [`FAULT_AT_MS`]: waits
    /// until then.
    pub async fn arm_request_loss(&self) {
        self.wait_for_the_fault().await;
    }

    /// The connection comes back by itself after [`DOWN_MS`].
    pub async fn heal(&self) {}

    /// The schedule expires the session at [`FAULT_AT_MS`]: waits until
    /// just after.
    pub async fn expire(&self, _client: &zkcheck_zookeeper_client::Client) {
        self.wait_for_the_fault().await;
    }

    /// Simulated ms since the run began.
    pub fn now_ms(&self) -> u64 {
        self.app.now_ns() / 1_000_000
    }

    /// Waits until the client's last request before the silence is due.
    pub async fn before_idle(&self) {
        let due_ms = SILENCE_AT_MS - super::timing_sequences::IDLE_MS;
        let now_ms = self.now_ms();
        assert!(
            now_ms < due_ms,
            "sim side: the sequence reached its idle time at {now_ms} ms, after {due_ms} ms: \
             move SILENCE_AT_MS later"
        );
        self.app.sleep_ms(due_ms - now_ms).await;
    }

    /// The schedule silences the connection at [`SILENCE_AT_MS`]: waits
    /// until then and returns it.
    pub async fn silence_after_idle(&self) -> u64 {
        self.app.sleep_ms(SILENCE_AT_MS - self.now_ms()).await;
        SILENCE_AT_MS
    }

    async fn wait_for_the_fault(&self) {
        let now_ms = self.app.now_ns() / 1_000_000;
        assert!(
            now_ms < FAULT_AT_MS,
            "sim side: the sequence reached its fault at {now_ms} ms, after the scheduled \
             fault ({FAULT_AT_MS} ms): move FAULT_AT_MS later"
        );
        self.app.sleep_ms(FAULT_AT_MS + 1 - now_ms).await;
    }
}
