//! Fault rates: how often each kind of fault strikes, and how long the
//! timed ones last.

use serde::{Deserialize, Serialize};

/// An inclusive range of milliseconds, written `[min, max]` in TOML
/// (exactly two numbers: `[1, 2, 3]` is refused, not cut).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "[u64; 2]")]
pub struct MsRange {
    pub min: u64,
    pub max: u64,
}

impl MsRange {
    pub const fn new(min: u64, max: u64) -> MsRange {
        MsRange { min, max }
    }

    /// A uniform draw in `[min, max]` (max below min counts as min).
    pub fn draw(self, rng: &mut impl rand::Rng) -> u64 {
        if self.max <= self.min {
            self.min
        } else {
            rng.gen_range(self.min..=self.max)
        }
    }
}

impl From<[u64; 2]> for MsRange {
    fn from([min, max]: [u64; 2]) -> MsRange {
        MsRange { min, max }
    }
}

/// Deserializes `[min, max]`: exactly two numbers (for ranges kept as arrays).
pub fn two_numbers<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<[u64; 2], D::Error> {
    let numbers = Vec::<u64>::deserialize(deserializer)?;
    MsRange::try_from(numbers)
        .map(Into::into)
        .map_err(serde::de::Error::custom)
}

impl TryFrom<Vec<u64>> for MsRange {
    type Error = String;

    fn try_from(numbers: Vec<u64>) -> Result<MsRange, String> {
        match numbers[..] {
            [min, max] => Ok(MsRange { min, max }),
            _ => Err(format!(
                "expected a range [min, max] of two numbers, got {} number(s)",
                numbers.len()
            )),
        }
    }
}

impl From<MsRange> for [u64; 2] {
    fn from(range: MsRange) -> [u64; 2] {
        [range.min, range.max]
    }
}

/// Rates of the faults. Per-request rates are probabilities; the others are
/// expected events per client per simulated second (reaps: per second).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultRates {
    /// Probability that a request is lost before the server applies it
    /// (the connection drops with it).
    pub loss_before_apply: f64,
    /// Probability that a request is applied and its reply lost (the
    /// connection drops before the reply leaves).
    pub loss_after_apply: f64,
    pub disconnects_per_s: f64,
    /// Connections that go silent (a black hole for `down_ms`; see
    /// `Fault::Silent`), per client per second.
    pub silences_per_s: f64,
    pub expiries_per_s: f64,
    pub pauses_per_s: f64,
    /// Opt-in, beyond ZooKeeper's guarantees.
    pub spurious_watches_per_s: f64,
    /// Opt-in, beyond ZooKeeper's guarantees.
    pub watch_delays_per_s: f64,
    pub reaps_per_s: f64,
    /// How long reconnecting fails after a connection drops.
    pub down_ms: MsRange,
    pub pause_ms: MsRange,
    pub watch_delay_ms: MsRange,
    pub watch_delay_window_ms: MsRange,
    /// A session-layer policy, not a fault: a client that has been
    /// disconnected for the session timeout (on its own clock, from the
    /// loss of its connection) gives up on its session, as Curator 3.0+
    /// does: the recipe sees Expired and the client opens a new session,
    /// while the server keeps the old one until its own timer runs out.
    /// Off by default (the Java client waits to hear Expired from a
    /// server); in swarm mode, when on, each seed switches it on or off.
    #[serde(skip_serializing_if = "is_false")]
    pub client_expiry: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl Default for FaultRates {
    fn default() -> Self {
        FaultRates {
            loss_before_apply: 0.0,
            loss_after_apply: 0.0,
            disconnects_per_s: 0.0,
            silences_per_s: 0.0,
            expiries_per_s: 0.0,
            pauses_per_s: 0.0,
            spurious_watches_per_s: 0.0,
            watch_delays_per_s: 0.0,
            reaps_per_s: 0.0,
            down_ms: MsRange::new(0, 1_000),
            pause_ms: MsRange::new(100, 10_000),
            watch_delay_ms: MsRange::new(5, 50),
            watch_delay_window_ms: MsRange::new(50, 500),
            client_expiry: false,
        }
    }
}

impl FaultRates {
    /// No fault at all (durations keep their settings).
    pub fn is_quiet(&self) -> bool {
        self.rates().iter().all(|rate| *rate <= 0.0)
    }

    fn rates(&self) -> [f64; 9] {
        [
            self.loss_before_apply,
            self.loss_after_apply,
            self.disconnects_per_s,
            self.silences_per_s,
            self.expiries_per_s,
            self.pauses_per_s,
            self.spurious_watches_per_s,
            self.watch_delays_per_s,
            self.reaps_per_s,
        ]
    }

    /// Swarm testing: each fault kind with a non-zero rate is switched on
    /// with probability 1/2, at a rate drawn uniformly below the configured
    /// one; durations are drawn as sub-ranges of the configured ones; the
    /// client-side expiry policy, when on, is kept with probability 1/2.
    pub fn swarm(&self, rng: &mut impl rand::Rng) -> FaultRates {
        let mut pick = |rate: f64| {
            if rate > 0.0 && rng.gen_bool(0.5) {
                rate * rng.gen_range(0.05..=1.0)
            } else {
                0.0
            }
        };
        let mut drawn = FaultRates {
            loss_before_apply: pick(self.loss_before_apply),
            loss_after_apply: pick(self.loss_after_apply),
            disconnects_per_s: pick(self.disconnects_per_s),
            expiries_per_s: pick(self.expiries_per_s),
            pauses_per_s: pick(self.pauses_per_s),
            spurious_watches_per_s: pick(self.spurious_watches_per_s),
            watch_delays_per_s: pick(self.watch_delays_per_s),
            reaps_per_s: pick(self.reaps_per_s),
            ..self.clone()
        };
        drawn.down_ms = sub_range(self.down_ms, rng);
        drawn.pause_ms = sub_range(self.pause_ms, rng);
        // Drawn last, and only when configured, so that scenarios without
        // them draw exactly what they drew before these existed.
        if self.silences_per_s > 0.0 && rng.gen_bool(0.5) {
            drawn.silences_per_s = self.silences_per_s * rng.gen_range(0.05..=1.0);
        } else {
            drawn.silences_per_s = 0.0;
        }
        drawn.client_expiry = self.client_expiry && rng.gen_bool(0.5);
        drawn
    }
}

fn sub_range(range: MsRange, rng: &mut impl rand::Rng) -> MsRange {
    let a = range.draw(rng);
    let b = range.draw(rng);
    MsRange::new(a.min(b), a.max(b))
}
