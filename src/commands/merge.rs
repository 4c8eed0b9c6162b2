//! `zkcheck merge SHARD.json... [--json OUT] [--report DIR]`: the shards
//! of one sweep (`sweep --shard K/N --json`, run on as many machines) as
//! one result, as if one sweep had run every seed: counts added, buckets
//! combined (each keeps its lowest seeds), the lowest failures kept.
//!
//! Every file is checked before anything is merged ([`check`]): JSON of
//! [`FORMAT`](super::sweep_result::FORMAT) version
//! [`FORMAT_VERSION`](super::sweep_result::FORMAT_VERSION) (a syntax or
//! type error names the file, line and key), counts that add up, kept seeds
//! inside the file's own shard, written by this zkcheck (`generated_by`:
//! another version may simulate and count differently), content that still
//! matches its `digest` (a checksum of the rest, see
//! [`SweepJson::content_digest`]: it catches a shard edited or damaged
//! after its sweep wrote it, not a forger who recomputes it); and all files
//! must come from the same sweep (the same scenario file and text, variant,
//! seed range, shard count and options), each shard once. A refused input
//! is exit 2 and nothing is merged.
//!
//! A merge without every shard (or with a shard that did not run all its
//! seeds, `--fail-fast`) is merged but marked: `INCOMPLETE` on stderr,
//! `complete: false` and the missing shards in the JSON, in the report's
//! title and text. It never exits 0.
//!
//! Exit status, as a sweep's: 1 when any shard found a violation; else 2
//! on refused input, an incomplete merge, a seed that made no progress or
//! an output that cannot be written; 0 when every seed of every shard passed.

mod check;

use super::common::{bad_input, exit_status_with_internal, load_scenario, write_json};
use super::seed_commands::SeedCommands;
use super::sweep_result::{
    describe, print_buckets, text_hash, BucketJson, Failure, Findings, MergedShards, SweepCoverage,
    SweepJson, INTERNAL_ERROR_BUCKET,
};
use super::Harness;
use check::{check_same_sweep, checked_totals, read_shard, strip_file, ShardFile};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_sim::guided::tally::CoverageTally;
use zk_sim::scenario::SeedRange;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_shards_are_ranges() {
        assert_eq!(missing_shards(&[0, 1, 2, 3], 4), Vec::<String>::new());
        assert_eq!(missing_shards(&[1, 2], 4), ["0", "3"]);
        assert_eq!(missing_shards(&[0, 5], 1_000_000), ["1..5", "6..1000000"]);
    }
}
