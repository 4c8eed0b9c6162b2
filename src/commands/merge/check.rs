//! The checks a merge makes before it merges anything: each shard file
//! read and checked on its own ([`read_shard`]: format, version, the zkcheck
//! that wrote it, counts that add up, kept seeds inside its shard, its
//! digest), all of them from one sweep ([`check_same_sweep`]), and every
//! sum the merge will make ([`checked_totals`]); a refusal names the file,
//! line and key.

use super::MergeError;
use crate::commands::sweep_result::{SweepJson, FORMAT, FORMAT_VERSION, INTERNAL_ERROR_BUCKET};
use std::collections::BTreeMap;
use std::path::Path;
use zk_sim::scenario::{SeedRange, Shard};

/// One shard's result, checked.
pub(super) struct ShardFile {
    pub(super) path: String,
    pub(super) json: SweepJson,
    pub(super) range: SeedRange,
    pub(super) shard: Shard,
}

/// Reads and checks one shard's JSON.
pub(super) fn read_shard(path: &Path) -> Result<ShardFile, MergeError> {
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
pub(super) struct Totals {
    pub(super) runs: u64,
    pub(super) requests: u64,
}

/// Adds up every count the merge adds (runs, requests, the verdict
/// counts, each bucket's and each property's seeds) with checked
/// arithmetic: a sum beyond 2^64 is refused (exit 2) naming the file
/// whose count overflowed it and the key, never wrapped.
pub(super) fn checked_totals(shards: &[ShardFile]) -> Result<Totals, MergeError> {
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

/// Refuses files of different sweeps, naming the first key that differs.
pub(super) fn check_same_sweep(shards: &[ShardFile]) -> Result<(), MergeError> {
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
pub(super) fn strip_file(message: &str, file: &str) -> String {
    message
        .strip_prefix(file)
        .map(|rest| rest.trim_start_matches(':').trim_start().to_string())
        .unwrap_or_else(|| message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_on_their_lines() {
        let text = "{\n  \"runs\": \"x\",\n  \"seeds\": \"0..10\"\n}";
        assert_eq!(key_at(text, 2).as_deref(), Some("runs"));
        assert_eq!(line_of(text, "seeds"), Some(3));
        assert_eq!(key_at(text, 4), None);
    }
}
