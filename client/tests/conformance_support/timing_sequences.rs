//! The session's own timing, written once like [`super::sequences`] and
//! expanded at the same sites: an idle client goes silent and the step
//! records when it notices.
//!
//! With the crate's default 6 s session its tick is 300 ms, it pings after
//! 900 ms without a send and gives a connection up after 2,400 ms without a
//! byte (session/mod.rs `reset_timeout`). The client's last request goes
//! out [`IDLE_MS`] before the silence; its ping followed 900-1,200 ms after
//! that request (at a tick), so it notices the silence at its first tick
//! 2,400 ms past the ping's answer: 1,900 to 2,500 ms into the silence,
//! where in the window depends on the tick grid's phase, which a real run
//! does not control, so the line names the window. (A client on the Java
//! client's cadence, a ping after 2 s idle on a 2 s timer, had heard
//! nothing since the request: it noticed 1,000 ms in.) The silence then
//! ends and the client reconnects into its session.

/// How long before the silence the client's last request goes out.
pub const IDLE_MS: u64 = 1_400;
/// How long the silence lasts (past the latest notice).
pub const SILENCE_MS: u64 = 2_700;

/// Expands the timing sequences for one client crate;
/// `define_sequences!` must be expanded in the same module.
/// Uses `SessionState` as `define_lock_sequences!` imports it.
macro_rules! define_timing_sequences {
    ($zk:ident) => {
        /// Where the crate notices the silence, in ms into it; a real run
        /// may be up to 100 ms either side (its timers' scheduling).
        const NOTICED_MS: (u64, u64) = (1_900, 2_500);

        /// An idle client's silence: when it notices, and that it
        /// reconnects into its session once the silence ends.
        async fn idle_silence(env: &Env, zk: &Client, n: &Norm, t: &mut Transcript) {
            env.before_idle().await;
            t.step("exists root", n.exists(zk.check_stat(&n.root).await));
            let mut states = zk.state_watcher();
            let silenced_at_ms = env.silence_after_idle().await;
            let noticed = env
                .within(STATE_MS, async {
                    while states.changed().await != SessionState::Disconnected {}
                })
                .await;
            let line = match noticed {
                None => "not within the wait".to_string(),
                Some(()) => {
                    let into_ms = env.now_ms() - silenced_at_ms;
                    let (low, high) = NOTICED_MS;
                    match (low - 100..=high + 100).contains(&into_ms) {
                        true => format!("between {low} and {high} ms into the silence"),
                        false => format!("{into_ms} ms into the silence"),
                    }
                }
            };
            t.step("disconnected", line);
            let back = env
                .within(STATE_MS, async {
                    loop {
                        let state = states.changed().await;
                        if state != SessionState::Disconnected {
                            return state;
                        }
                    }
                })
                .await;
            t.step("after the silence", format!("{back:?}"));
            t.step("exists root", n.exists(zk.check_stat(&n.root).await));
        }
    };
}

pub(crate) use define_timing_sequences;
