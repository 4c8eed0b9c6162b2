//! How often a diagnosis names the right mechanism: a labelled set of runs
//! (a scenario, its variant, a seed range, the property whose violations
//! are labelled and the mechanisms a failing seed may rightly show) is run,
//! and each failing seed's label (the mechanism of its first violation of
//! that property) is compared with the run's expectation.
//!
//! Precision per mechanism is correct labels / labels given, over the
//! set's failing seeds; a seed diagnosed `undiagnosed` gives no label (it
//! is counted apart: the diagnosis said it was not sure). `tests/
//! diagnosis_precision.rs` pins it, and `BENCHMARKS.md` prints the table.

use crate::oracles::Property;
use crate::scenario::Scenario;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;

/// The mechanism a diagnosis gives when it is not sure.
pub const UNDIAGNOSED: &str = "undiagnosed";

/// How many mislabelled seeds a report keeps (for the reader), in all and
/// per run and label.
pub const MISLABELS_KEPT: usize = 256;
pub const MISLABELS_PER_LABEL: usize = 6;

/// One labelled run: a scenario (its variant chosen) over a seed range,
/// and for each labelled property the mechanisms its violations may
/// rightly name. Every seed is run once; each labelled property a seed
/// violates is one labelled failure.
#[derive(Clone, Debug)]
pub struct Labelled {
    /// A short name for tables: the catalog entry, the fixture.
    pub name: String,
    pub scenario: Scenario,
    pub seeds: Range<u64>,
    pub expect: Vec<Expect>,
}

/// What a labelled property's violations should name.
#[derive(Clone, Debug)]
pub struct Expect {
    pub property: Property,
    /// The mechanisms a failing seed may rightly show, the expected one
    /// first (several where the bug rightly shows several ways: a queue
    /// that loses or duplicates items).
    pub accept: Vec<String>,
}

impl Labelled {
    /// A run whose `property` violations should name one of `accept`.
    pub fn new(
        name: impl Into<String>,
        scenario: Scenario,
        seeds: Range<u64>,
        property: Property,
        accept: &[&str],
    ) -> Labelled {
        Labelled {
            name: name.into(),
            scenario,
            seeds,
            expect: Vec::new(),
        }
        .and(property, accept)
    }

    /// Labels another property of the same runs.
    pub fn and(mut self, property: Property, accept: &[&str]) -> Labelled {
        self.expect.push(Expect {
            property,
            accept: accept.iter().map(|m| m.to_string()).collect(),
        });
        self
    }
}

/// Per mechanism: labels given, how many of them were right, and how many
/// failing seeds expected it (their first accepted mechanism).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MechanismCount {
    pub given: u64,
    pub correct: u64,
    pub expected: u64,
}

impl MechanismCount {
    /// correct / given; None when no label was given.
    pub fn precision(&self) -> Option<f64> {
        (self.given > 0).then(|| self.correct as f64 / self.given as f64)
    }
}

/// One labelled run's outcome, per labelled property.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCount {
    pub name: String,
    pub property: String,
    pub seeds: u64,
    pub failing: u64,
    pub correct: u64,
    pub undiagnosed: u64,
    /// The labels its failing seeds got, with their counts.
    pub labels: BTreeMap<String, u64>,
}

/// A failing seed whose label is not one its run accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mislabel {
    pub run: String,
    pub property: String,
    pub seed: u64,
    pub expected: String,
    pub given: String,
}

/// What [`measure`] found.
#[derive(Clone, Debug, Default)]
pub struct PrecisionReport {
    pub mechanisms: BTreeMap<String, MechanismCount>,
    pub runs: Vec<RunCount>,
    /// The first mislabelled seeds ([`MISLABELS_PER_LABEL`] per run and
    /// label, [`MISLABELS_KEPT`] in all).
    pub mislabels: Vec<Mislabel>,
}

impl PrecisionReport {
    /// Mechanisms whose precision is below `floor` (0..=1), with it.
    pub fn below(&self, floor: f64) -> Vec<(String, f64)> {
        self.mechanisms
            .iter()
            .filter_map(|(m, c)| Some((m.clone(), c.precision()?)))
            .filter(|(_, p)| *p < floor)
            .collect()
    }

    /// Failing seeds labelled `undiagnosed`, over the whole set.
    pub fn undiagnosed(&self) -> u64 {
        self.runs.iter().map(|r| r.undiagnosed).sum()
    }

    /// The per-mechanism table, then the per-run one, as Markdown.
    pub fn table(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "| mechanism | labels given | correct | precision | failing seeds expecting it |\n",
        );
        out.push_str("|---|---:|---:|---:|---:|\n");
        for (mechanism, c) in &self.mechanisms {
            let precision = c
                .precision()
                .map_or("-".to_string(), |p| format!("{:.1}%", p * 100.0));
            let _ = writeln!(
                out,
                "| {mechanism} | {} | {} | {precision} | {} |",
                c.given, c.correct, c.expected
            );
        }
        let _ = writeln!(
            out,
            "\n`undiagnosed` (no label given): {} failing seed(s)\n",
            self.undiagnosed()
        );
        out.push_str("| run | property | seeds | failing | correct | undiagnosed | labels |\n");
        out.push_str("|---|---|---:|---:|---:|---:|---|\n");
        for run in &self.runs {
            let labels: Vec<String> = run.labels.iter().map(|(m, n)| format!("{m} {n}")).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                run.name,
                run.property,
                run.seeds,
                run.failing,
                run.correct,
                run.undiagnosed,
                labels.join(", ")
            );
        }
        out
    }
}

/// Runs every seed of every labelled run (with every violation reported)
/// and counts each failing seed's label against its run's expectation.
pub fn measure(set: &[Labelled]) -> PrecisionReport {
    let mut report = PrecisionReport::default();
    for labelled in set {
        let runs = measure_one(labelled, &mut report);
        report.runs.extend(runs);
    }
    report
}

fn measure_one(labelled: &Labelled, report: &mut PrecisionReport) -> Vec<RunCount> {
    let mut scenario = labelled.scenario.clone();
    scenario.all_violations = true;
    let runner = scenario.runner();
    let mut runs: Vec<RunCount> = labelled
        .expect
        .iter()
        .map(|expect| RunCount {
            name: labelled.name.clone(),
            property: expect.property.to_string(),
            seeds: labelled.seeds.end.saturating_sub(labelled.seeds.start),
            ..RunCount::default()
        })
        .collect();
    for seed in labelled.seeds.clone() {
        let violations = runner.run(seed, false).violations;
        for (expect, run) in labelled.expect.iter().zip(&mut runs) {
            if let Some(label) = label_of(&violations, expect.property) {
                count(labelled, expect, run, seed, label, report);
            }
        }
    }
    runs
}

/// Counts one failing seed's `label` against `expect`.
fn count(
    labelled: &Labelled,
    expect: &Expect,
    run: &mut RunCount,
    seed: u64,
    label: String,
    report: &mut PrecisionReport,
) {
    let expected = expect
        .accept
        .first()
        .cloned()
        .unwrap_or_else(|| UNDIAGNOSED.to_string());
    run.failing += 1;
    *run.labels.entry(label.clone()).or_default() += 1;
    report
        .mechanisms
        .entry(expected.clone())
        .or_default()
        .expected += 1;
    if label == UNDIAGNOSED {
        run.undiagnosed += 1;
        return;
    }
    let right = expect.accept.contains(&label);
    let count = report.mechanisms.entry(label.clone()).or_default();
    count.given += 1;
    if right {
        count.correct += 1;
        run.correct += 1;
    } else if report.mislabels.len() < MISLABELS_KEPT
        && report
            .mislabels
            .iter()
            .filter(|m| m.run == labelled.name && m.given == label)
            .count()
            < MISLABELS_PER_LABEL
    {
        report.mislabels.push(Mislabel {
            run: labelled.name.clone(),
            property: expect.property.to_string(),
            seed,
            expected,
            given: label,
        });
    }
}

/// The mechanism of the first violation of `property`, if any.
fn label_of(violations: &[crate::oracles::Violation], property: Property) -> Option<String> {
    let violation = violations.iter().find(|v| v.property == property)?;
    Some(
        violation
            .diagnosis
            .as_ref()
            .map_or_else(|| UNDIAGNOSED.to_string(), |d| d.mechanism.clone()),
    )
}
