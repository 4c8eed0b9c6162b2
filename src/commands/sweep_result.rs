//! A sweep's result, bounded whatever the number of seeds: counts, failing
//! seeds by signature (each bucket's count and its lowest
//! [`KEPT_SEEDS_PER_BUCKET`] seeds), the lowest [`KEPT_FAILURES`] failures
//! in full. [`Findings`] is what a sweep's workers add each failing seed to
//! and what `zkcheck merge` adds shards into; [`SweepJson`] is what
//! `sweep --json` writes and `merge` reads and writes (format
//! [`FORMAT`], version [`FORMAT_VERSION`]); printing the summary is here
//! too, so a merge prints what a sweep prints.
//!
//! Keeping the lowest seeds (not the first found) makes the result
//! independent of the order the workers finish in: a sweep of `0..N` and
//! the merge of its shards keep the same seeds.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use zk_sim::oracles::Violation;
use zk_sim::scenario::SeedRange;

/// `format` of a sweep's JSON.
pub const FORMAT: &str = "zkcheck-sweep";
/// `format_version` of a sweep's JSON: 2 added the format, the scenario's
/// hash, the options, completeness and the kept seeds (version 1 had no
/// `format` key); 3 counts the internal errors (panics) apart from the
/// violations (`internal_errors`, bucket `internal_error`); 4 adds the
/// `digest` of the content, which `merge` verifies.
pub const FORMAT_VERSION: u32 = 4;
/// The bucket of the seeds whose run panicked (an internal error of
/// zkcheck, not a property's signature).
pub const INTERNAL_ERROR_BUCKET: &str = "internal_error";
/// Failing seeds kept per bucket (the lowest); the rest are counted.
pub const KEPT_SEEDS_PER_BUCKET: usize = 10;
/// Failing seeds kept in full (the lowest of any bucket); the rest are counted.
pub const KEPT_FAILURES: usize = 20;

/// One failing seed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Failure {
    pub seed: u64,
    pub replay: String,
    pub violations: Vec<Violation>,
    pub nondeterministic: bool,
    /// Where the two runs of a nondeterministic seed parted (the first
    /// event that differs).
    #[serde(default)]
    pub divergence: Option<String>,
    /// The run made no progress: its verdict could not have failed.
    pub vacuous: Option<String>,
    /// The run panicked: an internal error of zkcheck (the message and
    /// its location); `replay` then reruns it with `sim`.
    pub panic: Option<String>,
}

impl Failure {
    /// The buckets this failure counts in, with what each means in words:
    /// a violation's signature (`property/mechanism`) and its diagnosis.
    fn buckets(&self) -> Vec<(String, String)> {
        let mut buckets: Vec<(String, String)> = self
            .violations
            .iter()
            .map(|v| {
                let summary = v
                    .diagnosis
                    .as_ref()
                    .map_or_else(|| v.message.clone(), |d| d.summary.clone());
                (v.signature(), summary)
            })
            .collect();
        if self.nondeterministic {
            let why = "the seed gave two different traces".to_string();
            buckets.push(("determinism".to_string(), why));
        }
        if let Some(why) = &self.vacuous {
            buckets.push(("no_progress".to_string(), why.clone()));
        }
        if let Some(panic) = &self.panic {
            let why = format!("zkcheck panicked (an internal error, not the recipe's): {panic}");
            buckets.push((INTERNAL_ERROR_BUCKET.to_string(), why));
        }
        buckets.dedup_by(|a, b| a.0 == b.0);
        buckets
    }

    /// A violation in the verdict's sense (exit 1): not a vacuous run, not
    /// an internal error.
    fn is_violation(&self) -> bool {
        !self.violations.is_empty() || self.nondeterministic
    }
}

/// One signature's failing seeds, as the summary shows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketJson {
    pub signature: String,
    /// Every failing seed with this signature, counted.
    pub seeds: u64,
    pub first_seed: u64,
    /// The lowest failing seeds, at most `kept_seeds_per_bucket`, in order.
    pub first_seeds: Vec<u64>,
    /// The first seed's diagnosis in words.
    pub summary: String,
    /// The first seed's replay command.
    pub replay: String,
}

/// One signature's failing seeds, as they are counted.
#[derive(Clone, Debug)]
struct Tally {
    seeds: u64,
    /// The lowest seeds, at most [`KEPT_SEEDS_PER_BUCKET`]; never empty.
    kept: BTreeSet<u64>,
    /// The lowest seed's diagnosis in words.
    summary: String,
    /// The lowest seed's replay command, when it came from a shard.
    replay: Option<String>,
}

impl Tally {
    fn first_seed(&self) -> u64 {
        *self.kept.first().expect("a bucket has a seed")
    }

    /// Adds seeds counted elsewhere: the counts add up, the lowest seeds
    /// of both are kept, the summary is the lowest seed's.
    fn absorb(&mut self, other: Tally) {
        if other.first_seed() < self.first_seed() {
            self.summary = other.summary;
            self.replay = other.replay;
        }
        self.seeds += other.seeds;
        self.kept.extend(other.kept);
        while self.kept.len() > KEPT_SEEDS_PER_BUCKET {
            self.kept.pop_last();
        }
    }
}

/// What a sweep found: bounded whatever the number of seeds.
#[derive(Debug, Default)]
pub struct Findings {
    pub failed: u64,
    /// Failing seeds that are violations (not only runs without progress).
    pub violations: u64,
    /// Failing seeds whose run panicked: internal errors of zkcheck.
    pub internal_errors: u64,
    by_bucket: BTreeMap<String, Tally>,
    /// The lowest failing seeds, at most [`KEPT_FAILURES`].
    first: BTreeMap<u64, Failure>,
}

impl Findings {
    /// Counts one failing seed.
    pub fn add(&mut self, failure: Failure) {
        self.failed += 1;
        self.violations += u64::from(failure.is_violation());
        self.internal_errors += u64::from(failure.panic.is_some());
        for (signature, summary) in failure.buckets() {
            self.add_to_bucket(
                signature,
                Tally {
                    seeds: 1,
                    kept: BTreeSet::from([failure.seed]),
                    summary,
                    // An internal error comes with its rerun command.
                    replay: (!failure.replay.is_empty()).then(|| failure.replay.clone()),
                },
            );
        }
        self.keep_failure(failure);
    }

    fn add_to_bucket(&mut self, signature: String, tally: Tally) {
        match self.by_bucket.get_mut(&signature) {
            Some(bucket) => bucket.absorb(tally),
            None => {
                self.by_bucket.insert(signature, tally);
            }
        }
    }

    fn keep_failure(&mut self, failure: Failure) {
        self.first.insert(failure.seed, failure);
        if self.first.len() > KEPT_FAILURES {
            self.first.pop_last();
        }
    }

    /// Adds what a shard found (from its JSON, already checked).
    pub fn absorb(&mut self, shard: &SweepJson) {
        self.failed += shard.failed;
        self.violations += shard.violations;
        self.internal_errors += shard.internal_errors;
        for bucket in &shard.buckets {
            self.add_to_bucket(
                bucket.signature.clone(),
                Tally {
                    seeds: bucket.seeds,
                    kept: bucket.first_seeds.iter().copied().collect(),
                    summary: bucket.summary.clone(),
                    replay: Some(bucket.replay.clone()),
                },
            );
        }
        for failure in &shard.first_failures {
            self.keep_failure(failure.clone());
        }
    }

    /// Seeds that made no progress (their verdicts could not have failed).
    pub fn no_progress(&self) -> u64 {
        self.by_bucket.get("no_progress").map_or(0, |b| b.seeds)
    }

    /// The kept failures, lowest seed first, each with its replay command
    /// (`replay(seed)` where it has none yet).
    pub fn first_failures(&self, replay: &dyn Fn(u64) -> String) -> Vec<Failure> {
        let mut failures: Vec<Failure> = self.first.values().cloned().collect();
        for failure in &mut failures {
            if failure.replay.is_empty() {
                failure.replay = replay(failure.seed);
            }
        }
        failures
    }

    /// The buckets, most seeds first (then by signature), each with its
    /// first seed's replay command (`replay(seed)` unless a shard gave it).
    pub fn buckets(&self, replay: &dyn Fn(u64) -> String) -> Vec<BucketJson> {
        let mut buckets: Vec<BucketJson> = self
            .by_bucket
            .iter()
            .map(|(signature, tally)| BucketJson {
                signature: signature.clone(),
                seeds: tally.seeds,
                first_seed: tally.first_seed(),
                first_seeds: tally.kept.iter().copied().collect(),
                summary: tally.summary.clone(),
                replay: tally
                    .replay
                    .clone()
                    .unwrap_or_else(|| replay(tally.first_seed())),
            })
            .collect();
        buckets.sort_by(|a, b| b.seeds.cmp(&a.seeds).then(a.signature.cmp(&b.signature)));
        buckets
    }

    /// Failing seeds per property (the JSON's older view of the buckets).
    pub fn by_property(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for (signature, bucket) in &self.by_bucket {
            let property = signature.split('/').next().unwrap_or(signature);
            *counts.entry(property.to_string()).or_default() += bucket.seeds;
        }
        counts
    }
}

/// The shards a merged result was made of.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MergedShards {
    /// N of `--shard K/N`.
    pub count: u64,
    /// The shards merged (K), in order.
    pub merged: Vec<u64>,
    /// The shards no file was given for (`K` or `K..L`, L excluded):
    /// their seeds never ran.
    pub missing: Vec<String>,
    /// The files merged, in shard order.
    pub files: Vec<String>,
}

/// A sweep's summary as JSON (`sweep --json`, `merge`'s input and output).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepJson {
    /// Always `FORMAT`.
    pub format: String,
    /// `FORMAT_VERSION` of the writer.
    pub format_version: u32,
    /// The zkcheck that ran it (`zkcheck 0.1.0`).
    pub generated_by: String,
    pub scenario: String,
    /// The scenario file as given on the command line.
    pub file: String,
    /// A hash of the scenario file's text (FNV-1a, 64 bits, hex): shards
    /// merge only if they ran the same text.
    pub scenario_hash: String,
    pub recipe: String,
    pub variant: String,
    /// The whole seed range, `A..B`, also on a shard.
    pub seeds: String,
    /// `[K, N]` of `--shard K/N`; `null` when the sweep ran the whole range.
    pub shard: Option<(u64, u64)>,
    pub all_violations: bool,
    pub check_determinism: bool,
    pub fail_fast: bool,
    /// Seeds the sweep (its shard) had to run.
    pub expected_runs: u128,
    /// Every expected seed ran (not stopped by `--fail-fast`, no shard
    /// missing from a merge).
    pub complete: bool,
    /// What a merge was made of; `null` for a sweep.
    #[serde(default)]
    pub merged_shards: Option<MergedShards>,
    pub runs: u64,
    pub passed: u64,
    pub failed: u64,
    /// Failing seeds that broke a property (or ran differently twice):
    /// exit 1 when any.
    pub violations: u64,
    /// Failing seeds whose run panicked: internal errors of zkcheck, not
    /// violations (bucket `internal_error`); exit 3 when any and no
    /// violation. `failed = violations + no_progress + internal_errors`.
    pub internal_errors: u64,
    /// Seeds that made no progress (their verdicts could not have failed).
    pub no_progress: u64,
    pub failures_by_property: BTreeMap<String, u64>,
    /// How many seeds each bucket's `first_seeds` keeps at most.
    pub kept_seeds_per_bucket: u64,
    /// Failing seeds by signature, most seeds first.
    pub buckets: Vec<BucketJson>,
    /// How many failures `first_failures` keeps at most.
    pub kept_first_failures: u64,
    /// The lowest failing seeds in full.
    pub first_failures: Vec<Failure>,
    pub requests: u64,
    /// The sweep's wall time; for a merge, the longest shard's.
    pub wall_seconds: f64,
    /// For a merge, the shards' rates added up.
    pub seeds_per_second: f64,
    pub requests_per_second: f64,
    /// `--coverage`: the states and steps reached; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<SweepCoverage>,
    /// [`SweepJson::content_digest`] of everything above, as written:
    /// `merge` refuses a shard whose content no longer matches it.
    pub digest: String,
}

impl SweepJson {
    /// The digest of this result's content: FNV-1a (64 bits, hex) of its
    /// compact JSON with `digest` empty and the three timing figures
    /// (`wall_seconds`, `seeds_per_second`, `requests_per_second`) zero:
    /// JSON does not read every float back bit for bit, and they are
    /// measurements, not verdicts. It catches a shard changed after it was
    /// written (a count edited by hand, a truncated or spliced copy, a tool
    /// that rewrote it) unless whoever changed it recomputed the digest: it
    /// is a checksum anyone can compute, not a signature, so it cannot tell
    /// a consistent forgery from a real run.
    pub fn content_digest(&self) -> String {
        let unsealed = SweepJson {
            digest: String::new(),
            wall_seconds: 0.0,
            seeds_per_second: 0.0,
            requests_per_second: 0.0,
            ..self.clone()
        };
        text_hash(&serde_json::to_string(&unsealed).expect("a sweep result serializes"))
    }

    /// This result with its `digest` set.
    pub fn sealed(self) -> SweepJson {
        let digest = self.content_digest();
        SweepJson { digest, ..self }
    }
}

/// FNV-1a (64 bits) of a scenario file's text, as hex.
pub fn text_hash(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// Prints the buckets, each with its first seed and replay command.
pub fn print_buckets(buckets: &[BucketJson], failed: u64) {
    if buckets.is_empty() {
        return;
    }
    let several = buckets.iter().map(|b| b.seeds).sum::<u64>() > failed;
    println!(
        "failing seeds by signature{}:",
        if several {
            " (a seed that shows several counts in each)"
        } else {
            ""
        }
    );
    let width = buckets.iter().map(|b| b.signature.len()).max().unwrap_or(0);
    for bucket in buckets {
        println!(
            "  {:>6} seed(s)  {:<width$}  first seed {}",
            bucket.seeds, bucket.signature, bucket.first_seed
        );
        println!("          {}", bucket.summary);
        println!("          replay: {}", bucket.replay);
    }
}

/// Prints one failing seed and how to replay it.
pub fn describe(failure: &Failure) {
    for violation in &failure.violations {
        println!(
            "VIOLATION of {} (seed {}): {}",
            violation.property_name(),
            failure.seed,
            violation.message
        );
    }
    if failure.nondeterministic {
        println!(
            "NON-DETERMINISTIC: seed {} gave two different traces",
            failure.seed
        );
        if let Some(divergence) = &failure.divergence {
            println!("  they part at {divergence}");
        }
        if !zk_sim::world::isolated::SELECT_IS_SEEDED {
            println!(
                "  (built without `--cfg tokio_unstable`: a `tokio::select!` without `biased;` \
                 draws its branch outside the seed; add the flag to .cargo/config.toml)"
            );
        }
    }
    if let Some(why) = &failure.vacuous {
        println!("NO PROGRESS (seed {}): {why}", failure.seed);
    }
    if let Some(panic) = &failure.panic {
        let described = super::internal_error::describe(failure.seed, panic, &failure.replay);
        println!("{described}");
        return;
    }
    println!("  replay: {}", failure.replay);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vacuous(seed: u64) -> Failure {
        Failure {
            seed,
            replay: String::new(),
            violations: Vec::new(),
            nondeterministic: false,
            divergence: None,
            vacuous: Some("no call made progress".to_string()),
            panic: None,
        }
    }

    #[test]
    fn a_bucket_counts_every_seed_and_keeps_the_lowest() {
        let mut findings = Findings::default();
        for seed in (0..100).rev() {
            findings.add(vacuous(seed));
        }
        let buckets = findings.buckets(&|seed| format!("replay {seed}"));
        assert_eq!(buckets.len(), 1);
        assert_eq!(buckets[0].seeds, 100);
        assert_eq!(
            buckets[0].first_seeds,
            (0..KEPT_SEEDS_PER_BUCKET as u64).collect::<Vec<_>>()
        );
        assert_eq!(buckets[0].replay, "replay 0");
        let failures = findings.first_failures(&|seed| format!("replay {seed}"));
        assert_eq!(failures.len(), KEPT_FAILURES);
        assert_eq!(failures[0].seed, 0);
        assert_eq!((findings.failed, findings.violations), (100, 0));
        assert_eq!(findings.no_progress(), 100);
    }

    #[test]
    fn text_hash_is_fnv1a() {
        assert_eq!(text_hash(""), "cbf29ce484222325");
        assert_eq!(text_hash("a"), "af63dc4c8601ec8c");
    }
}

/// A sweep's coverage (`--coverage`) as its JSON keeps it: the counts, the
/// curve, and every state and step with its lowest seed (what a merge of
/// shards needs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepCoverage {
    /// What an abstract state keeps.
    pub abstraction: String,
    pub states: u64,
    pub transitions: u64,
    /// Seeds per block of the curve.
    pub block_seeds: u64,
    pub curve: Vec<zk_sim::guided::tally::CurveBlock>,
    pub reached: zk_sim::guided::tally::CoverageTally,
    /// `--against-model`: the shared states against the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against_model: Option<super::against_model::Comparison>,
}

impl SweepCoverage {
    /// The coverage of a tally over `range`'s seeds.
    pub fn of(reached: zk_sim::guided::tally::CoverageTally, range: SeedRange) -> SweepCoverage {
        let seeds = u64::try_from(range.len()).unwrap_or(u64::MAX);
        let block = zk_sim::guided::tally::block_for(seeds);
        SweepCoverage {
            abstraction: zk_sim::guided::tally::ABSTRACTION.to_string(),
            states: reached.states.len() as u64,
            transitions: reached.transitions.len() as u64,
            block_seeds: block,
            curve: reached.curve(range.first, seeds, block),
            reached,
            against_model: None,
        }
    }

    pub fn summary_lines(&self) -> Vec<String> {
        zk_sim::guided::tally::summary_lines(&self.reached, &self.curve, self.block_seeds, "seeds")
    }
}
