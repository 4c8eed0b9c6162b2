//! `zkcheck merge SHARD.json... [--json OUT] [--report DIR]`: the shards
//! of one sweep (`sweep --shard K/N --json`, run on as many machines) as
//! one result, as if one sweep had run every seed: counts added, buckets
//! combined (each keeps its lowest seeds), the lowest failures kept.
//!
//! Every file is checked before anything is merged: JSON of
//! [`FORMAT`] version [`FORMAT_VERSION`] (a syntax or type error names the
//! file, line and key), counts that add up, kept seeds inside the file's
//! own shard, written by this zkcheck (`generated_by`: another version may
//! simulate and count differently), content that still matches its
//! `digest` (a checksum of the rest, see [`SweepJson::content_digest`]: it
//! catches a shard edited or damaged after its sweep wrote it, not a
//! forger who recomputes it); and all files must come from the same sweep
//! (the same scenario file and text, variant, seed range, shard count and
//! options), each shard once. A refused input is exit 2 and nothing is
//! merged.
//!
//! A merge without every shard (or with a shard that did not run all its
//! seeds, `--fail-fast`) is merged but marked: `INCOMPLETE` on stderr,
//! `complete: false` and the missing shards in the JSON, in the report's
//! title and text. It never exits 0.
//!
//! Exit status, as a sweep's: 1 when any shard found a violation; else 2
//! on refused input, an incomplete merge, a seed that made no progress or
//! an output that cannot be written; 0 when every seed of every shard passed.

use super::common::{bad_input, exit_status_with_internal, load_scenario, write_json};
use super::seed_commands::SeedCommands;
use super::sweep_result::{
    describe, print_buckets, text_hash, BucketJson, Failure, Findings, MergedShards, SweepCoverage,
    SweepJson, FORMAT, FORMAT_VERSION, INTERNAL_ERROR_BUCKET,
};
use super::Harness;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_sim::guided::tally::CoverageTally;
use zk_sim::scenario::{SeedRange, Shard};

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The shards' results (`zkcheck sweep --shard K/N --json FILE`).
    #[arg(required = true, value_name = "SHARD.json")]
    pub shards: Vec<PathBuf>,
    /// Write the merged summary as JSON to FILE (the format of `sweep --json`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the merged sweep's report into DIR, as `sweep --report` does
    /// (the first seed of each bucket replayed: needs the scenario file).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

/// Why shard files cannot be merged (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A file that is not a valid shard result.
    #[error("{file}{}: {}{message}", line.map(|l| format!(":{l}")).unwrap_or_default(), key.as_ref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
    BadShard {
        file: String,
        line: Option<usize>,
        key: Option<String>,
        message: String,
    },
    /// Two files of different sweeps.
    #[error("{other}: key `{key}`: {other_value} differs from {first}'s {first_value}: shards merge only if they come from the same sweep")]
    Mismatch {
        key: &'static str,
        first: String,
        first_value: String,
        other: String,
        other_value: String,
    },
    /// One shard given twice.
    #[error("{second}: shard {index}/{count} is also {first}: each shard may be given once")]
    Overlap {
        index: u64,
        count: u64,
        first: String,
        second: String,
    },
    /// `--report` needs the scenario the shards ran.
    #[error("--report: {file}: {message}")]
    Scenario { file: String, message: String },
}

/// One shard's result, checked.
struct ShardFile {
    path: String,
    json: SweepJson,
    range: SeedRange,
    shard: Shard,
}

pub fn run(harness: &Harness, args: MergeArgs) -> ExitCode {
    if let Err(code) = super::outputs::probe(args.json.as_deref(), args.report.as_deref()) {
        return code;
    }
    match merge(harness, &args) {
        Ok(code) => code,
        Err(error) => bad_input(error),
    }
}

/// The shards' coverage merged (each state and step with its lowest
/// seed), when every shard kept it (`sweep --coverage`); a shard without
/// it leaves the merge without coverage, and says so.
fn merged_coverage(shards: &[ShardFile], range: SeedRange) -> Option<SweepCoverage> {
    let kept = shards.iter().filter(|s| s.json.coverage.is_some()).count();
    if kept < shards.len() {
        if kept > 0 {
            eprintln!(
                "note: {kept} of {} shard(s) kept their coverage (sweep --coverage): the merge has none",
                shards.len()
            );
        }
        return None;
    }
    let mut tally = CoverageTally::default();
    for shard in shards {
        if let Some(coverage) = &shard.json.coverage {
            tally.merge(&coverage.reached);
        }
    }
    Some(SweepCoverage::of(tally, range))
}

fn merge(harness: &Harness, args: &MergeArgs) -> Result<ExitCode, MergeError> {
    let mut shards = args
        .shards
        .iter()
        .map(|path| read_shard(path))
        .collect::<Result<Vec<_>, _>>()?;
    check_same_sweep(&shards)?;
    shards.sort_by_key(|s| s.shard.index);
    for pair in shards.windows(2) {
        if pair[0].shard.index == pair[1].shard.index {
            return Err(MergeError::Overlap {
                index: pair[0].shard.index,
                count: pair[0].shard.count,
                first: pair[0].path.clone(),
                second: pair[1].path.clone(),
            });
        }
    }
    let first = &shards[0];
    let count = first.shard.count;
    let indices: Vec<u64> = shards.iter().map(|s| s.shard.index).collect();
    let missing = missing_shards(&indices, count);
    let unfinished: Vec<String> = shards
        .iter()
        .filter(|s| !s.json.complete)
        .map(|s| {
            format!(
                "shard {}/{count} ran {} of its {} seeds ({})",
                s.shard.index, s.json.runs, s.json.expected_runs, s.path
            )
        })
        .collect();
    // Every sum the merge makes, checked first: `absorb` then adds
    // numbers known to fit.
    let totals = checked_totals(&shards)?;
    let mut findings = Findings::default();
    for shard in &shards {
        findings.absorb(&shard.json);
    }
    let (runs, requests) = (totals.runs, totals.requests);
    let wall = shards
        .iter()
        .map(|s| s.json.wall_seconds)
        .fold(0.0, f64::max);
    // Replay commands are made here from the scenario file, the variant
    // and the seed; never the strings the shards carry.
    let commands = seed_commands(harness, &first.json);
    let command = |seed, panicked: bool| {
        if panicked {
            commands.rerun(seed)
        } else {
            commands.replay(seed)
        }
    };
    let mut buckets = findings.buckets(&|_| String::new());
    for bucket in &mut buckets {
        bucket.replay = command(bucket.first_seed, bucket.signature == INTERNAL_ERROR_BUCKET);
    }
    let mut failures = findings.first_failures(&|_| String::new());
    for failure in &mut failures {
        failure.replay = command(failure.seed, failure.panic.is_some());
    }
    let mut incomplete = Vec::new();
    if !missing.is_empty() {
        incomplete.push(format!(
            "shard(s) {} of {count} missing: their seeds never ran",
            missing.join(", ")
        ));
    }
    incomplete.extend(unfinished);
    let incomplete = (!incomplete.is_empty()).then(|| incomplete.join("; "));
    let json = &first.json;
    let echo = zk_sim::echo::escape_controls;
    println!(
        "merged {} of {count} shard(s) of scenario {} ({} {}), seeds {}: {runs} of {} seeds, {} failed{}",
        shards.len(),
        echo(&json.scenario),
        echo(&json.recipe),
        echo(&json.variant),
        echo(&json.seeds),
        first.range.len(),
        findings.failed,
        if incomplete.is_some() { " (INCOMPLETE)" } else { "" }
    );
    print_buckets(&for_terminal_buckets(&buckets), findings.failed);
    for failure in failures.iter().take(3) {
        describe(&for_terminal_failure(failure));
    }
    let coverage = merged_coverage(&shards, first.range);
    if let Some(coverage) = &coverage {
        for line in coverage.summary_lines() {
            println!("{line}");
        }
    }
    if let Some(why) = &incomplete {
        eprintln!("error: INCOMPLETE merge: {why}");
    }
    let no_progress = findings.no_progress();
    if no_progress > 0 {
        eprintln!(
            "error: {no_progress} seed(s) made no progress or too little progress (below {}% of the workload's planned goals), so their verdicts could not have failed (or nearly); check the scenario's [config], [workload] and fault rates",
            zk_sim::world::MIN_GOAL_PERCENT
        );
    }
    let report_coverage = coverage.as_ref().map(|c| {
        let label = format!("seeds {} (merged shards)", first.range);
        let curve = super::coverage_report::curve(label, c.block_seeds, &c.curve);
        super::coverage_report::coverage(&c.reached, vec![curve], None, &harness.program)
    });
    let mut output_failed = false;
    if let Some(path) = &args.json {
        let merged = SweepJson {
            shard: None,
            expected_runs: first.range.len(),
            complete: incomplete.is_none(),
            merged_shards: Some(MergedShards {
                count,
                merged: indices,
                missing,
                files: shards.iter().map(|s| s.path.clone()).collect(),
            }),
            runs,
            passed: runs - findings.failed,
            failed: findings.failed,
            violations: findings.violations,
            internal_errors: findings.internal_errors,
            no_progress,
            failures_by_property: findings.by_property(),
            buckets: buckets.clone(),
            first_failures: failures,
            requests,
            wall_seconds: wall,
            seeds_per_second: shards.iter().map(|s| s.json.seeds_per_second).sum(),
            requests_per_second: shards.iter().map(|s| s.json.requests_per_second).sum(),
            coverage,
            ..json.clone()
        }
        .sealed();
        output_failed |= write_json(path, &merged).is_err();
    }
    if let Some(dir) = &args.report {
        let scenario = merged_scenario(harness, json)?;
        let mut document = super::sweep::sweep_document(
            harness,
            &scenario,
            &buckets,
            &json.seeds,
            (runs, findings.failed),
            incomplete.clone(),
        );
        document.coverage = report_coverage;
        output_failed |= super::report::write_dir(dir, &scenario.name, &document).is_err();
    }
    let code = exit_status_with_internal(
        findings.violations > 0,
        findings.internal_errors > 0,
        output_failed || no_progress > 0 || incomplete.is_some(),
    );
    Ok(code)
}

/// Reads and checks one shard's JSON.
fn read_shard(path: &Path) -> Result<ShardFile, MergeError> {
    let file = path.display().to_string();
    let bad = |line: Option<usize>, key: Option<&str>, message: String| MergeError::BadShard {
        file: file.clone(),
        line,
        key: key.map(str::to_string),
        message,
    };
    let text = zk_sim::input::read_input(path).map_err(|e| MergeError::BadShard {
        file: file.clone(),
        line: None,
        key: None,
        message: strip_file(&e.to_string(), &file),
    })?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad(
            Some(e.line()),
            None,
            format!("not JSON: {}", without_position(&e)),
        )
    })?;
    let format = value.get("format").and_then(|f| f.as_str());
    if format != Some(FORMAT) {
        return Err(bad(
            line_of(&text, "format"),
            Some("format"),
            format!(
                "{}, not \"{FORMAT}\": merge reads what `zkcheck sweep --shard K/N --json FILE` writes (sweep results written before format version {FORMAT_VERSION} have no `format`: run the shard again)",
                value.get("format").map_or("absent".to_string(), |f| f.to_string())
            ),
        ));
    }
    let version = value.get("format_version").and_then(|v| v.as_u64());
    if version != Some(u64::from(FORMAT_VERSION)) {
        return Err(bad(
            line_of(&text, "format_version"),
            Some("format_version"),
            format!(
                "{}: this zkcheck reads version {FORMAT_VERSION} (run the shard again with it)",
                value
                    .get("format_version")
                    .map_or("absent".to_string(), |v| v.to_string())
            ),
        ));
    }
    let json: SweepJson = serde_json::from_str(&text).map_err(|e| {
        let key = key_at(&text, e.line()).or_else(|| missing_field(&e));
        bad(Some(e.line()), key.as_deref(), without_position(&e))
    })?;
    let line = |key: &str| line_of(&text, key);
    let this_zkcheck = this_zkcheck();
    if json.generated_by != this_zkcheck {
        return Err(bad(
            line("generated_by"),
            Some("generated_by"),
            format!(
                "written by `{}`, and this is {this_zkcheck}: another zkcheck may simulate, diagnose and count differently, so its seeds are not this sweep's; run the shard again with this one",
                zk_sim::echo::escape_controls(&json.generated_by)
            ),
        ));
    }
    let range = SeedRange::parse(&json.seeds).map_err(|e| bad(line("seeds"), Some("seeds"), e))?;
    let shard = match json.shard {
        None => Shard { index: 0, count: 1 },
        Some((index, count)) if count > 0 && index < count => Shard { index, count },
        Some((index, count)) => {
            return Err(bad(
                line("shard"),
                Some("shard"),
                format!("[{index}, {count}] is not a shard K/N with K < N"),
            ))
        }
    };
    if let Some(merged) = &json.merged_shards {
        return Err(bad(
            line("merged_shards"),
            Some("merged_shards"),
            format!(
                "a merge of {} shard(s) itself: merge the shards' own files",
                merged.merged.len()
            ),
        ));
    }
    let checks: [(&str, bool, String); 7] = [
        (
            "expected_runs",
            json.expected_runs == range.len_in(Some(shard)),
            format!(
                "{} seeds, but shard {}/{} of {range} holds {}",
                json.expected_runs,
                shard.index,
                shard.count,
                range.len_in(Some(shard))
            ),
        ),
        (
            "runs",
            u128::from(json.runs) <= json.expected_runs,
            format!(
                "{} is more than the {} expected",
                json.runs, json.expected_runs
            ),
        ),
        (
            "complete",
            json.complete == (u128::from(json.runs) == json.expected_runs),
            format!(
                "{} with {} of {} seeds run",
                json.complete, json.runs, json.expected_runs
            ),
        ),
        (
            "passed",
            json.passed.checked_add(json.failed) == Some(json.runs),
            format!(
                "{} passed and {} failed are not the {} runs",
                json.passed, json.failed, json.runs
            ),
        ),
        (
            "violations",
            json.violations
                .checked_add(json.no_progress)
                .and_then(|sum| sum.checked_add(json.internal_errors))
                == Some(json.failed),
            format!(
                "{} violations, {} without progress and {} internal errors are not the {} failed (every failing seed is exactly one of them)",
                json.violations, json.no_progress, json.internal_errors, json.failed
            ),
        ),
        (
            "kept_seeds_per_bucket",
            (1..=10_000).contains(&json.kept_seeds_per_bucket),
            format!("{} is outside 1..=10000", json.kept_seeds_per_bucket),
        ),
        (
            "first_failures",
            json.first_failures.len() as u64 <= json.kept_first_failures
                && json.first_failures.len() as u64 <= json.failed,
            format!(
                "{} failures kept, more than kept_first_failures ({}) or failed ({})",
                json.first_failures.len(),
                json.kept_first_failures,
                json.failed
            ),
        ),
    ];
    if let Some((key, _, message)) = checks.into_iter().find(|(_, ok, _)| !ok) {
        return Err(bad(line(key), Some(key), message));
    }
    let in_shard = |seed: u64| {
        seed >= range.first
            && seed <= range.last
            && (seed - range.first) % shard.count == shard.index
    };
    let mut signatures = std::collections::BTreeSet::new();
    for (i, bucket) in json.buckets.iter().enumerate() {
        let key = format!("buckets[{i}]");
        let kept = &bucket.first_seeds;
        let problem = if !signatures.insert(bucket.signature.as_str()) {
            Some(format!("signature `{}` appears twice", bucket.signature))
        } else if kept.is_empty() || kept.len() as u64 > json.kept_seeds_per_bucket {
            Some(format!(
                "first_seeds holds {} seeds, not 1..={}",
                kept.len(),
                json.kept_seeds_per_bucket
            ))
        } else if kept.len() as u64 > bucket.seeds || bucket.seeds > json.failed {
            Some(format!(
                "{} seeds counted, {} kept, {} failed in all",
                bucket.seeds,
                kept.len(),
                json.failed
            ))
        } else if kept[0] != bucket.first_seed || kept.windows(2).any(|w| w[0] >= w[1]) {
            Some("first_seeds are not in order from first_seed".to_string())
        } else {
            kept.iter().find(|&&seed| !in_shard(seed)).map(|seed| {
                format!(
                    "seed {seed} is not in shard {}/{} of {range}",
                    shard.index, shard.count
                )
            })
        };
        if let Some(message) = problem {
            return Err(bad(line("buckets"), Some(&key), message));
        }
    }
    check_bucket_sums(&json).map_err(|(key, message)| bad(line(&key), Some(&key), message))?;
    check_replay_inputs(&json).map_err(|(key, message)| bad(line(key), Some(key), message))?;
    if let Some(failure) = json.first_failures.iter().find(|f| !in_shard(f.seed)) {
        return Err(bad(
            line("first_failures"),
            Some("first_failures"),
            format!(
                "seed {} is not in shard {}/{} of {range}",
                failure.seed, shard.index, shard.count
            ),
        ));
    }
    // Last: the checks above name what is wrong with a shard; this one
    // says that its content changed since the sweep wrote it.
    let digest = json.content_digest();
    if json.digest != digest {
        return Err(bad(
            line("digest"),
            Some("digest"),
            format!(
                "`{}` does not match the file's content (digest {digest}): the shard was changed after its sweep wrote it; run the shard again",
                zk_sim::echo::escape_controls(&json.digest)
            ),
        ));
    }
    Ok(ShardFile {
        path: file,
        json,
        range,
        shard,
    })
}

/// What a sweep run by this binary writes as `generated_by`.
fn this_zkcheck() -> String {
    format!("zkcheck {}", env!("CARGO_PKG_VERSION"))
}

/// The buckets of one shard add up (sums checked, never wrapped): every
/// failing seed counts in a bucket, the `no_progress` and internal-error
/// buckets hold exactly the seeds counted as such, and
/// `failures_by_property` is the buckets' seeds by property. On error:
/// the key and why.
fn check_bucket_sums(json: &SweepJson) -> Result<(), (String, String)> {
    let mut total: u64 = 0;
    let mut by_property: BTreeMap<String, u64> = BTreeMap::new();
    for (i, bucket) in json.buckets.iter().enumerate() {
        let overflow = || {
            (
                format!("buckets[{i}].seeds"),
                format!("{}: the buckets' seeds add up beyond 2^64", bucket.seeds),
            )
        };
        total = total.checked_add(bucket.seeds).ok_or_else(overflow)?;
        let property = bucket
            .signature
            .split('/')
            .next()
            .unwrap_or(&bucket.signature);
        let count = by_property.entry(property.to_string()).or_default();
        *count = count.checked_add(bucket.seeds).ok_or_else(overflow)?;
    }
    if total < json.failed {
        return Err((
            "buckets".to_string(),
            format!(
                "{total} seeds in all the buckets, fewer than the {} failed: every failing seed counts in a bucket",
                json.failed
            ),
        ));
    }
    let bucket_seeds = |signature: &str| {
        json.buckets
            .iter()
            .find(|b| b.signature == signature)
            .map_or(0, |b| b.seeds)
    };
    for (key, signature, counted) in [
        ("no_progress", "no_progress", json.no_progress),
        (
            "internal_errors",
            INTERNAL_ERROR_BUCKET,
            json.internal_errors,
        ),
    ] {
        if bucket_seeds(signature) != counted {
            return Err((
                key.to_string(),
                format!(
                    "{counted}, but bucket `{signature}` holds {} seeds",
                    bucket_seeds(signature)
                ),
            ));
        }
    }
    if by_property != json.failures_by_property {
        return Err((
            "failures_by_property".to_string(),
            "is not the buckets' seeds counted by property".to_string(),
        ));
    }
    Ok(())
}

/// What a merge builds replay commands from (the scenario file and the
/// variant) holds no control character: a command printed with one would
/// act on the terminal.
fn check_replay_inputs(json: &SweepJson) -> Result<(), (&'static str, String)> {
    for (key, value) in [("file", &json.file), ("variant", &json.variant)] {
        if value.is_empty() || value.chars().any(char::is_control) {
            return Err((
                key,
                format!(
                    "`{}` is not a scenario file or variant a replay command can name",
                    zk_sim::echo::escape_controls(value)
                ),
            ));
        }
    }
    Ok(())
}

/// The merge's sums, each checked.
struct Totals {
    runs: u64,
    requests: u64,
}

/// Adds up every count the merge adds (runs, requests, the verdict
/// counts, each bucket's and each property's seeds) with checked
/// arithmetic: a sum beyond 2^64 is refused (exit 2) naming the file
/// whose count overflowed it and the key, never wrapped.
fn checked_totals(shards: &[ShardFile]) -> Result<Totals, MergeError> {
    let overflow = |shard: &ShardFile, key: String| MergeError::BadShard {
        file: shard.path.clone(),
        line: None,
        key: Some(key),
        message: "the shards' counts add up beyond 2^64: not counts of one sweep".to_string(),
    };
    let mut sums: BTreeMap<String, u64> = BTreeMap::new();
    for shard in shards {
        let j = &shard.json;
        // (the key in the file, what it adds up into, the count)
        let mut counts: Vec<(String, String, u64)> = [
            ("runs", j.runs),
            ("passed", j.passed),
            ("failed", j.failed),
            ("violations", j.violations),
            ("no_progress", j.no_progress),
            ("internal_errors", j.internal_errors),
            ("requests", j.requests),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), key.to_string(), value))
        .collect();
        counts.extend(j.buckets.iter().enumerate().map(|(i, b)| {
            let sum = format!("bucket {}", b.signature);
            (format!("buckets[{i}].seeds"), sum, b.seeds)
        }));
        counts.extend(j.failures_by_property.iter().map(|(p, n)| {
            let key = format!("failures_by_property.{p}");
            (key.clone(), key, *n)
        }));
        for (key, sum_key, value) in counts {
            let sum = sums.entry(sum_key).or_default();
            *sum = sum.checked_add(value).ok_or_else(|| overflow(shard, key))?;
        }
    }
    Ok(Totals {
        runs: sums["runs"],
        requests: sums["requests"],
    })
}

/// The replay commands of a merged sweep, from its scenario file, variant
/// and options (as `sweep` prints them): the `--variant` flag is left out
/// only when the scenario file (the same text the shards ran) names that
/// variant itself.
fn seed_commands(harness: &Harness, json: &SweepJson) -> SeedCommands {
    let file_variant = zk_sim::input::read_input(Path::new(&json.file))
        .ok()
        .filter(|text| text_hash(text) == json.scenario_hash)
        .and_then(|text| {
            zk_sim::scenario::Scenario::parse(
                Path::new(&json.file),
                &text,
                harness.registry.sim_recipes(),
            )
            .ok()
        })
        .map(|scenario| scenario.file_variant);
    SeedCommands::new(
        &harness.program,
        &json.file,
        &json.variant,
        file_variant.as_deref(),
        json.all_violations,
    )
}

/// Buckets as printed: the text a shard carried with its control
/// characters escaped.
fn for_terminal_buckets(buckets: &[BucketJson]) -> Vec<BucketJson> {
    let echo = zk_sim::echo::escape_controls;
    buckets
        .iter()
        .map(|b| BucketJson {
            signature: echo(&b.signature),
            summary: echo(&b.summary),
            ..b.clone()
        })
        .collect()
}

/// A failure as printed: its messages with control characters escaped.
fn for_terminal_failure(failure: &Failure) -> Failure {
    let echo = zk_sim::echo::escape_controls;
    let mut shown = failure.clone();
    for violation in &mut shown.violations {
        violation.message = echo(&violation.message);
    }
    shown.vacuous = shown.vacuous.as_deref().map(echo);
    shown.divergence = shown.divergence.as_deref().map(echo);
    shown.panic = shown.panic.as_deref().map(echo);
    shown
}

/// Refuses files of different sweeps, naming the first key that differs.
fn check_same_sweep(shards: &[ShardFile]) -> Result<(), MergeError> {
    let first = &shards[0];
    let identity = |s: &ShardFile| -> Vec<(&'static str, String)> {
        let j = &s.json;
        vec![
            ("generated_by", j.generated_by.clone()),
            ("file", j.file.clone()),
            ("scenario_hash", j.scenario_hash.clone()),
            ("recipe", j.recipe.clone()),
            ("variant", j.variant.clone()),
            ("seeds", j.seeds.clone()),
            ("shard", format!("a shard of {}", s.shard.count)),
            ("all_violations", j.all_violations.to_string()),
            ("check_determinism", j.check_determinism.to_string()),
            ("kept_seeds_per_bucket", j.kept_seeds_per_bucket.to_string()),
            ("kept_first_failures", j.kept_first_failures.to_string()),
        ]
    };
    let expected = identity(first);
    for other in &shards[1..] {
        for ((key, first_value), (_, other_value)) in expected.iter().zip(identity(other)) {
            if *first_value != other_value {
                return Err(MergeError::Mismatch {
                    key,
                    first: first.path.clone(),
                    first_value: first_value.clone(),
                    other: other.path.clone(),
                    other_value,
                });
            }
        }
    }
    Ok(())
}

/// The shards of 0..count not in `present` (sorted, distinct), as `K` or
/// `K..L` (L excluded): a few words even for a million shards.
fn missing_shards(present: &[u64], count: u64) -> Vec<String> {
    let mut missing = Vec::new();
    let mut next = 0;
    for &index in present.iter().chain(std::iter::once(&count)) {
        match index - next {
            0 => {}
            1 => missing.push(next.to_string()),
            _ => missing.push(format!("{next}..{index}")),
        }
        next = index + 1;
    }
    missing
}

/// The scenario the shards ran, for `--report`'s replays: the same file,
/// unchanged since.
fn merged_scenario(
    harness: &Harness,
    json: &SweepJson,
) -> Result<zk_sim::scenario::Scenario, MergeError> {
    let scenario_error = |message: String| MergeError::Scenario {
        file: json.file.clone(),
        message,
    };
    let path = Path::new(&json.file);
    let text = zk_sim::input::read_input(path)
        .map_err(|e| scenario_error(strip_file(&e.to_string(), &json.file)))?;
    if text_hash(&text) != json.scenario_hash {
        return Err(scenario_error(format!(
            "the file changed since the shards ran (hash {}, the shards' {}): the replays would not be theirs",
            text_hash(&text),
            json.scenario_hash
        )));
    }
    let mut scenario = load_scenario(harness, path, Some(&json.variant), "merge")
        .map_err(|_| scenario_error("cannot be loaded (above)".to_string()))?;
    scenario.all_violations = json.all_violations;
    Ok(scenario)
}

/// serde_json's message without its ` at line L column C` (the line is
/// given separately).
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The field serde says is missing, if that is the error.
fn missing_field(error: &serde_json::Error) -> Option<String> {
    let text = error.to_string();
    let rest = text.strip_prefix("missing field `")?;
    Some(rest.split('`').next()?.to_string())
}

/// The key written on line `line` (1-based) of pretty JSON, if any.
fn key_at(text: &str, line: usize) -> Option<String> {
    let content = text.lines().nth(line.checked_sub(1)?)?.trim_start();
    let rest = content.strip_prefix('"')?;
    let (key, after) = rest.split_once('"')?;
    after.trim_start().starts_with(':').then(|| key.to_string())
}

/// The first line (1-based) that writes `key`.
fn line_of(text: &str, key: &str) -> Option<usize> {
    let quoted = format!("\"{key}\"");
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(&quoted)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|i| i + 1)
}

/// An input error's message without the file name it may start with.
fn strip_file(message: &str, file: &str) -> String {
    message
        .strip_prefix(file)
        .map(|rest| rest.trim_start_matches(':').trim_start().to_string())
        .unwrap_or_else(|| message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_shards_are_ranges() {
        assert_eq!(missing_shards(&[0, 1, 2, 3], 4), Vec::<String>::new());
        assert_eq!(missing_shards(&[1, 2], 4), ["0", "3"]);
        assert_eq!(missing_shards(&[0, 5], 1_000_000), ["1..5", "6..1000000"]);
    }

    #[test]
    fn keys_are_found_on_their_lines() {
        let text = "{\n  \"runs\": \"x\",\n  \"seeds\": \"0..10\"\n}";
        assert_eq!(key_at(text, 2).as_deref(), Some("runs"));
        assert_eq!(line_of(text, "seeds"), Some(3));
        assert_eq!(key_at(text, 4), None);
    }
}
