//! `zkcheck bugs`: the bug catalog as one command. Every scenario in the
//! catalog directory (`scenarios/bugs/`) with a `[catalog]` table is run
//! three ways:
//! - by simulation, every seed of its range with `--all-violations`; a
//!   seed catches the bug only if one of its violations has the entry's
//!   own signature (`expect_signature`), so a bug caught by another bug's
//!   mechanism does not count;
//! - by model checking, when the entry names a model property: the
//!   original variant must break it (or show the example), the fixed
//!   variant must hold every property;
//! - the fixed variant on the same seeds (with `fixed_properties`), which
//!   must all pass.
//!
//! The fixed variant is `fixed` unless the entry names another
//! (`catalog.fixed`, e.g. `waits` for a recipe whose correct form is not
//! called `fixed`). An entry's `bug` is a number (`9`, `5a`: printed
//! `bug9`, sorted by number) or a short name (`crate1`: printed as it is,
//! after the numbered ones, by name).
//!
//! It prints a table and exits 0 only if every entry is caught with its
//! own signature and every fix holds; 1 otherwise; 3 when that is so but
//! a seed's run panicked (an internal error of zkcheck: that seed neither
//! catches the bug nor fails the fix; it is printed with its panic and the
//! command that reruns it); 2 on bad input.

use super::check_args::ModelArgs;
use super::common::{bad_input, load_scenario};
use super::report::{document, run_record, this_command, write_dir};
use super::seed_commands::replay_command;
use super::Harness;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use zk_models::run::{CheckReport, PropertyResult, RunOptions, Strategy, Verdict};
use zk_models::ModelVariant;
use zk_reports::schema::{self, ReportKind};
use zk_sim::scenario::{CatalogModel, Runner, Scenario, ScenarioError, SeedRange};
use zk_sim::world::RunReport;

#[derive(clap::Args)]
pub struct BugsArgs {
    /// The catalog: a directory of scenario files with a `[catalog]` table.
    #[arg(long, default_value = "scenarios/bugs")]
    pub dir: PathBuf,
    /// Seeds per entry, `A..B` (default: each scenario's `seeds`).
    #[arg(long)]
    pub seeds: Option<String>,
    /// Worker threads for the seeds (default: every core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Skip the model checks.
    #[arg(long)]
    pub no_model: bool,
    /// Write the catalog's report into DIR (catalog.html and one page per
    /// entry, with its first catching seed replayed).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

pub fn run(harness: &Harness, args: BugsArgs) -> ExitCode {
    match bugs(harness, &args) {
        Ok(code) | Err(code) => code,
    }
}

/// One entry, loaded and checked.
struct Entry {
    scenario: Scenario,
    fixed: Scenario,
    /// The entry's `catalog.bug`, as written (the catalog's order).
    id: String,
    /// Its printed name: `bug9`, or `crate1` for a named entry.
    bug: String,
    signature: String,
    model: Option<CatalogModel>,
}

fn bugs(harness: &Harness, args: &BugsArgs) -> Result<ExitCode, ExitCode> {
    let entries = load_entries(harness, args)?;
    super::outputs::probe(None, args.report.as_deref())?;
    let seeds = args
        .seeds
        .as_deref()
        .map(SeedRange::parse)
        .transpose()
        .map_err(|e| bad_input(format!("--seeds: {e}")))?;
    let jobs = match args.jobs {
        Some(0) => return Err(bad_input("--jobs: must be at least 1")),
        Some(jobs) => jobs.min(256),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let mut rows = Vec::new();
    let mut pages = Vec::new();
    let mut internal_errors = 0;
    let mut failed_otherwise = false;
    for entry in &entries {
        let range = seeds.unwrap_or(entry.scenario.seeds);
        let (row, page, panics, caught_and_fixed) =
            check_entry(harness, entry, range, jobs, args.no_model)?;
        print_row(&row);
        for (rerun, seed, panic) in &panics {
            println!(
                "         {}",
                super::internal_error::describe(*seed, panic, rerun).replace('\n', "\n         ")
            );
        }
        failed_otherwise |= !caught_and_fixed;
        internal_errors += panics.len();
        rows.push(row);
        pages.push(page);
    }
    println!(
        "{} of {} catalog entries caught by their own mechanism with their fix holding",
        rows.iter().filter(|row| row.ok).count(),
        rows.len()
    );
    let mut output_failed = false;
    if let Some(dir) = &args.report {
        let mut catalog = document(
            ReportKind::Catalog,
            "The bug catalog".into(),
            this_command(),
        );
        catalog.catalog = Some(schema::Catalog { entries: rows });
        output_failed |= write_dir(dir, "catalog", &catalog).is_err();
        for (bug, page) in pages.into_iter().flatten() {
            output_failed |= write_dir(dir, &bug, &page).is_err();
        }
    }
    if internal_errors > 0 {
        eprintln!(
            "error: {internal_errors} seed(s) hit an INTERNAL ERROR of zkcheck (the run panicked): a bug in zkcheck, not a verdict on the recipes"
        );
    }
    Ok(super::common::exit_status_with_internal(
        failed_otherwise,
        internal_errors > 0,
        output_failed,
    ))
}

/// Every scenario of the catalog directory, in file-name order.
fn load_entries(harness: &Harness, args: &BugsArgs) -> Result<Vec<Entry>, ExitCode> {
    let listing = std::fs::read_dir(&args.dir)
        .map_err(|e| bad_input(format!("{}: {e}", args.dir.display())))?;
    let mut files: Vec<PathBuf> = listing
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(bad_input(format!(
            "{}: no scenario files (*.toml) in the catalog directory",
            args.dir.display()
        )));
    }
    let mut entries = files
        .iter()
        .map(|file| load_entry(harness, file))
        .collect::<Result<Vec<Entry>, ExitCode>>()?;
    entries.sort_by_key(|entry| bug_order(&entry.id));
    Ok(entries)
}

/// `10` after `9`: the number, then the letters after it; a named entry
/// (`crate1`) after every numbered one, by its name.
fn bug_order(id: &str) -> (u64, String) {
    let digits: String = id.chars().take_while(char::is_ascii_digit).collect();
    match digits.parse() {
        Ok(number) => (number, id[digits.len()..].to_string()),
        Err(_) => (u64::MAX, id.to_string()),
    }
}

fn load_entry(harness: &Harness, file: &std::path::Path) -> Result<Entry, ExitCode> {
    let scenario = load_scenario(harness, file, None, "bugs")?;
    let source = std::fs::read_to_string(file).unwrap_or_default();
    let refuse = |key: &str, message: String| {
        let error = ScenarioError::at_key(file, &source, key, message);
        bad_input(error.to_string())
    };
    let Some(catalog) = scenario.raw.catalog.clone() else {
        return Err(refuse(
            "catalog",
            "not a catalog entry: add a `[catalog]` table (bug, model) and `expect_signature`"
                .into(),
        ));
    };
    let signature = scenario
        .expect_signature
        .clone()
        .expect("validation requires expect_signature with [catalog]");
    // The key that names the fixed variant: `catalog.fixed` when written.
    let fixed_key = match catalog.fixed {
        Some(_) => "catalog.fixed",
        None => "variant",
    };
    let fixed = scenario
        .with_variant(catalog.fixed_variant())
        .map_err(|e| {
            refuse(
                fixed_key,
                format!("the catalog runs the fixed variant: {e}"),
            )
        })?;
    if let Some(model) = &catalog.model {
        let variant = model.variant.as_deref().unwrap_or(&scenario.raw.variant);
        let resolved = model_args(&scenario, model, variant).resolve(harness);
        let (found, setup) = resolved.map_err(|e| refuse("catalog.model", e.to_string()))?;
        model_args(&scenario, model, catalog.fixed_variant())
            .resolve(harness)
            .map_err(|e| {
                refuse(
                    fixed_key,
                    format!("the catalog model-checks the fixed variant: {e}"),
                )
            })?;
        let names = found.property_names(&setup);
        if !names.contains(&model.property.as_str()) {
            return Err(refuse(
                "catalog.model.property",
                format!(
                    "`{}` is not a property of the {} {variant} model (it has: {})",
                    model.property,
                    scenario.recipe.name,
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(Entry {
        id: catalog.bug.clone(),
        bug: catalog.entry_name(),
        signature,
        model: catalog.model,
        scenario,
        fixed,
    })
}

fn model_args(scenario: &Scenario, model: &CatalogModel, variant: &str) -> ModelArgs {
    ModelArgs {
        recipe: scenario.recipe.name.clone(),
        variant: Some(variant.to_string()),
        clients: Some(super::check_args::Clients::One(model.clients)),
        cycles: 1,
        faults: model.faults.clone(),
        symmetry: false,
        ranks: false,
        all_orders: model.all_orders,
        no_reduction: false,
        servers: model.servers,
        lag: (model.servers > 1).then_some(model.lag),
        unrevalidated_reconnects: model.servers > 1 && !model.revalidate,
    }
}

/// What one seed showed: its signatures, or nothing when it passed.
type SeedSignatures = Vec<String>;

/// What a sweep of an entry found.
#[derive(Default)]
struct Found {
    /// Each failing seed's signatures, by seed.
    failing: BTreeMap<u64, SeedSignatures>,
    /// Each seed whose run panicked (an internal error), with the panic.
    panics: BTreeMap<u64, String>,
}

/// Runs every seed of `range` on `jobs` threads.
fn sweep(runner: &dyn Runner, range: SeedRange, jobs: usize) -> Found {
    let seeds = Mutex::new(range.iter(None));
    let found = Mutex::new(Found::default());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| loop {
                let Some(seed) = seeds.lock().expect("seeds").next() else {
                    return;
                };
                let report = match super::internal_error::catch(|| runner.run(seed, false)) {
                    Ok(report) => report,
                    Err(panic) => {
                        found.lock().expect("found").panics.insert(seed, panic);
                        continue;
                    }
                };
                let mut signatures: SeedSignatures =
                    report.violations.iter().map(|v| v.signature()).collect();
                if report.passed() && report.vacuous().is_some() {
                    signatures.push("no_progress".to_string());
                }
                if !signatures.is_empty() {
                    found
                        .lock()
                        .expect("found")
                        .failing
                        .insert(seed, signatures);
                }
            });
        }
    });
    found.into_inner().expect("found")
}

type Page = Option<(String, zk_reports::Report)>;

/// An internal error of one seed: (rerun command, seed, panic).
type Panic = (String, u64, String);

fn check_entry(
    harness: &Harness,
    entry: &Entry,
    range: SeedRange,
    jobs: usize,
    no_model: bool,
) -> Result<(schema::CatalogEntry, Page, Vec<Panic>, bool), ExitCode> {
    let mut scenario = entry.scenario.clone();
    scenario.all_violations = true;
    let Found { failing, panics } = sweep(scenario.runner().as_ref(), range, jobs);
    let rerun = |scenario: &Scenario, seed| {
        super::internal_error::rerun_command(&harness.program, scenario, seed)
    };
    let mut internal: Vec<Panic> = panics
        .into_iter()
        .map(|(seed, panic)| (rerun(&entry.scenario, seed), seed, panic))
        .collect();
    let caught: Vec<u64> = failing
        .iter()
        .filter(|(_, signatures)| signatures.contains(&entry.signature))
        .map(|(seed, _)| *seed)
        .collect();
    let mut others: BTreeMap<String, u64> = BTreeMap::new();
    for signatures in failing.values() {
        for signature in signatures.iter().filter(|s| **s != entry.signature) {
            *others.entry(signature.clone()).or_default() += 1;
        }
    }
    let fixed = sweep(entry.fixed.runner().as_ref(), range, jobs);
    let fixed_failing = fixed.failing;
    internal.extend(
        fixed
            .panics
            .into_iter()
            .map(|(seed, panic)| (rerun(&entry.fixed, seed), seed, panic)),
    );
    let first_seed = caught.first().copied();
    let (model, fixed_model) = match (&entry.model, no_model) {
        (Some(model), false) => model_findings(harness, entry, model),
        _ => (None, None),
    };
    let seeds_run = u64::try_from(range.len()).unwrap_or(u64::MAX);
    // The model catches the bug if its counterexample, replayed on the
    // simulator's stepper, shows the entry's own mechanism.
    let model_ok = model
        .as_ref()
        .is_none_or(|m| m.steps.is_some() && m.replayed_signatures.contains(&entry.signature))
        && fixed_model.as_ref().is_none_or(|(_, holds)| *holds);
    // Caught by its own mechanism and fixed, internal errors aside.
    let caught_and_fixed = first_seed.is_some() && fixed_failing.is_empty() && model_ok;
    let ok = caught_and_fixed && internal.is_empty();
    let row = schema::CatalogEntry {
        bug: entry.bug.clone(),
        title: entry.scenario.raw.description.clone(),
        scenario: entry.scenario.file.display().to_string(),
        recipe: entry.scenario.recipe.name.clone(),
        variant: entry.scenario.raw.variant.clone(),
        signature: entry.signature.clone(),
        simulation: schema::SimFinding {
            seeds_run,
            seeds_caught: caught.len() as u64,
            first_seed,
            replay: first_seed.map(|seed| replay_command(&harness.program, &scenario, seed)),
            other_signatures: others.into_iter().collect(),
        },
        model,
        fixed: schema::FixedFinding {
            variant: entry.fixed.raw.variant.clone(),
            seeds_run,
            seeds_failed: fixed_failing.len() as u64,
            model_states: fixed_model.as_ref().map(|(states, _)| *states),
            model_holds: fixed_model.as_ref().map(|(_, holds)| *holds),
        },
        ok,
    };
    let page = first_seed.map(|seed| {
        let report: RunReport = scenario.runner().run(seed, true);
        let mut page = document(
            ReportKind::Run,
            format!("{}: {}", entry.bug, entry.scenario.raw.description),
            replay_command(&harness.program, &scenario, seed),
        );
        page.runs.push(run_record(harness, &scenario, &report));
        (entry.bug.clone(), page)
    });
    Ok((row, page, internal, caught_and_fixed))
}

/// The original's model check (the property's counterexample or example)
/// and the fixed variant's (unique states, every property holds).
fn model_findings(
    harness: &Harness,
    entry: &Entry,
    model: &CatalogModel,
) -> (Option<schema::ModelFinding>, Option<(u64, bool)>) {
    let options = RunOptions {
        strategy: Strategy::Bfs,
        threads: 1,
        max_depth: None,
        timeout: Some(std::time::Duration::from_secs(600)),
        progress_every: None,
        memory_budget: None,
    };
    let variant = model
        .variant
        .as_deref()
        .unwrap_or(&entry.scenario.raw.variant);
    let check = |variant: &str| -> Option<(CheckReport, ModelVariant)> {
        let (found, setup) = model_args(&entry.scenario, model, variant)
            .resolve(harness)
            .ok()?;
        Some((found.check(&setup, &options), found))
    };
    let original = check(variant).map(|(report, found)| {
        let result = report
            .property(&model.property)
            .filter(|r| matches!(r.verdict, Verdict::Violated | Verdict::Found));
        schema::ModelFinding {
            property: model.property.clone(),
            steps: result.and_then(|r| r.trace.as_ref().map(Vec::len)),
            unique_states: report.unique_states as u64,
            replayed_signatures: result
                .map(|r| replayed_signatures(&found, &report, r))
                .unwrap_or_default(),
        }
    });
    let fixed = check(&entry.fixed.raw.variant).map(|(report, _)| {
        let holds = report.exhaustive
            && report
                .properties
                .iter()
                .all(|p| !matches!(p.verdict, Verdict::Violated));
        (report.unique_states as u64, holds)
    });
    (original, fixed)
}

/// What a counterexample shows when its schedule is replayed on the
/// stepper: the signatures of the violations it diagnoses there.
fn replayed_signatures(
    model: &ModelVariant,
    report: &CheckReport,
    result: &PropertyResult,
) -> Vec<String> {
    let Some(schedule) = report.schedule(result) else {
        return Vec::new();
    };
    match model.replay(&schedule) {
        Ok(replayed) => replayed.violations.iter().map(|v| v.signature()).collect(),
        Err(error) => vec![format!("{}/unexplained ({error})", result.name)],
    }
}

fn print_row(row: &schema::CatalogEntry) {
    let sim = &row.simulation;
    let found = match sim.first_seed {
        Some(seed) => format!("{}/{} seeds, first {seed}", sim.seeds_caught, sim.seeds_run),
        None => format!("NOT CAUGHT in {} seeds", sim.seeds_run),
    };
    let model = match &row.model {
        Some(m) => match m.steps {
            Some(steps) => {
                let shows = if m.replayed_signatures.contains(&row.signature) {
                    String::new()
                } else {
                    " (NOT this entry's mechanism)".to_string()
                };
                format!(
                    "{}: {steps} steps, {} states; replay shows {}{shows}",
                    m.property,
                    m.unique_states,
                    m.replayed_signatures.join(", ")
                )
            }
            None => format!("{}: NOT FOUND ({} states)", m.property, m.unique_states),
        },
        None => "-".to_string(),
    };
    let fixed = &row.fixed;
    // The fixed variant is named when it is not `fixed`.
    let fixed_variant = match fixed.variant.as_str() {
        "fixed" => String::new(),
        variant => format!("{variant}, "),
    };
    let fixed_model = match (fixed.model_states, fixed.model_holds) {
        (Some(states), Some(true)) => format!(", model holds ({states} states)"),
        (Some(states), _) => format!(", model FAILS ({states} states)"),
        _ => String::new(),
    };
    println!(
        "{:<8} {:<28} {:<44} {}",
        row.bug,
        format!("{} {}", row.recipe, row.variant),
        row.signature,
        if row.ok { "ok" } else { "FAILED" }
    );
    println!("         simulation: {found}");
    println!("         model:      {model}");
    println!(
        "         fixed:      {fixed_variant}{} of {} seeds fail{fixed_model}",
        fixed.seeds_failed, fixed.seeds_run
    );
    if let Some(replay) = &sim.replay {
        println!("         replay:     {replay}");
    }
}

#[cfg(test)]
mod tests {
    use super::bug_order;

    #[test]
    fn numbered_entries_come_by_number_then_named_ones_by_name() {
        let mut ids = vec!["crate1", "10", "9", "5b", "cache1", "5a", "14"];
        ids.sort_by_key(|id| bug_order(id));
        assert_eq!(ids, ["5a", "5b", "9", "10", "14", "cache1", "crate1"]);
    }
}
