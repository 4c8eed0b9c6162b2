//! A model checker counterexample, replayed on the stepper, gets the same
//! diagnosis a simulated run gets: each known bug's shortest
//! counterexample shows a signature (`property/mechanism`) that names its
//! mechanism, pinned here, and no violation of a replay is left
//! undiagnosed or unexplained. Small models only (one or two clients, one
//! fault), so the whole file runs in seconds.

use crate::common::check;
use zk_models::run::Verdict;
use zk_models::Registry;

/// One model check and what its counterexample's replay shows.
struct Case {
    /// The catalog entry (`scenarios/bugs/`) or the bug it shows.
    bug: &'static str,
    recipe: &'static str,
    variant: &'static str,
    clients: usize,
    faults: &'static str,
    /// The model property whose path is replayed.
    property: &'static str,
    /// The signatures of every violation the replay reports, in order.
    signatures: &'static [&'static str],
}

/// Checks `case`'s model, replays the path of its property and returns
/// the signatures the replay shows, after asserting every violation was
/// explained.
fn replayed_signatures(case: &Case) -> Vec<String> {
    let report = check(case.recipe, case.variant, case.clients, case.faults);
    let property = report
        .property(case.property)
        .unwrap_or_else(|| panic!("{}: no property {}", case.bug, case.property));
    assert!(
        matches!(property.verdict, Verdict::Violated | Verdict::Found),
        "{}: {} has no path\n{}",
        case.bug,
        case.property,
        report.summary()
    );
    let schedule = report.schedule(property).expect("a path");
    let entry = Registry::builtin()
        .model(case.recipe, case.variant)
        .expect("a registered model");
    let replayed = entry.replay(&schedule).expect("the path replays");
    for violation in &replayed.violations {
        let diagnosis = violation.diagnosis.as_ref().unwrap_or_else(|| {
            panic!("{}: undiagnosed violation\n{violation}", case.bug);
        });
        assert_ne!(
            diagnosis.mechanism, "unexplained",
            "{}: {violation}\n{}",
            case.bug, replayed.trace
        );
        assert!(!diagnosis.summary.is_empty(), "{}: {violation}", case.bug);
    }
    replayed.signatures()
}

fn assert_cases(cases: &[Case]) {
    let mut wrong = Vec::new();
    for case in cases {
        let found = replayed_signatures(case);
        if found != case.signatures {
            wrong.push(format!(
                "{} ({}/{} {} clients, {}, {}): expected {:?}, replay shows {:?}",
                case.bug,
                case.recipe,
                case.variant,
                case.clients,
                case.faults,
                case.property,
                case.signatures,
                found
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_original_lock_counterexamples_name_their_mechanisms() {
    assert_cases(&[
        Case {
            bug: "bug1",
            recipe: "lock",
            variant: "original",
            clients: 2,
            faults: "none",
            property: "fifo",
            // After healing the newcomer still holds (the replay makes no
            // new calls), so the older contender's call waits on a done client.
            signatures: &[
                "fifo/sorted-by-name-not-sequence",
                "liveness/waits-on-finished-client",
            ],
        },
        Case {
            bug: "bug1",
            recipe: "lock",
            variant: "original",
            clients: 2,
            faults: "none",
            property: "mutual_exclusion",
            // The earlier holder is the one that misjudged the order.
            signatures: &[
                "fifo/sorted-by-name-not-sequence",
                "mutual_exclusion/sorted-by-name-not-sequence",
                "fenced_mutual_exclusion/sorted-by-name-not-sequence",
            ],
        },
        Case {
            bug: "bug3",
            recipe: "lock",
            variant: "original",
            clients: 1,
            faults: "connection-loss=1",
            property: "no_stuck_waiter",
            signatures: &["liveness/waits-on-own-node"],
        },
        Case {
            // The shortest leak with one client is not bug3's orphan but
            // the release whose delete was lost (bug10's mechanism).
            bug: "bug10",
            recipe: "lock",
            variant: "original",
            clients: 1,
            faults: "connection-loss=1",
            property: "no_leaks",
            signatures: &["no_leaks/delete-lost"],
        },
        Case {
            bug: "bug9",
            recipe: "lock",
            variant: "original",
            clients: 2,
            faults: "none",
            property: "no_stuck_waiter",
            signatures: &["liveness/watch-on-deleted-node"],
        },
        Case {
            // bug3's catalog model check (2 clients): its shortest path
            // is bug10's mechanism.
            bug: "bug10",
            recipe: "lock",
            variant: "original",
            clients: 2,
            faults: "connection-loss=1",
            property: "no_stuck_waiter",
            signatures: &["liveness/release-lost"],
        },
        Case {
            bug: "bug10",
            recipe: "lock",
            variant: "original",
            clients: 2,
            faults: "connection-loss=1",
            property: "no_leaks",
            signatures: &["no_leaks/delete-lost"],
        },
    ]);
}

#[test]
fn a_stale_holder_after_expiry_is_named_on_the_fixed_lock() {
    assert_cases(&[Case {
        bug: "bug8",
        recipe: "lock",
        variant: "fixed",
        clients: 2,
        faults: "expiry=1",
        property: "stale_holder_overlap",
        signatures: &["mutual_exclusion/stale-holder-after-expiry"],
    }]);
}

#[test]
fn the_original_election_counterexamples_name_their_mechanisms() {
    assert_cases(&[
        Case {
            bug: "bug4",
            recipe: "election",
            variant: "original",
            clients: 2,
            faults: "none",
            property: "herd",
            signatures: &["herd/one-release-wakes-many"],
        },
        Case {
            // bug2's catalog model check: its shortest path is not the
            // blind create retry but the first read's ConnectionLoss
            // escaping run(), which leaves the contender's node behind:
            // the other waits behind the node of a finished client.
            bug: "bug2",
            recipe: "election",
            variant: "original",
            clients: 2,
            faults: "connection-loss=1",
            property: "no_stuck_waiter",
            signatures: &["liveness/waits-on-finished-client"],
        },
        Case {
            bug: "bug2",
            recipe: "election",
            variant: "original",
            clients: 2,
            faults: "connection-loss=1",
            property: "no_leaks",
            signatures: &["no_leaks/never-deleted"],
        },
        Case {
            bug: "election expiry",
            recipe: "election",
            variant: "original",
            clients: 2,
            faults: "expiry=1",
            property: "no_stuck_waiter",
            signatures: &["liveness/watch-lost-with-session"],
        },
    ]);
}

#[test]
fn the_original_queue_counterexamples_name_their_mechanisms() {
    for variant in ["original", "tutorial_original"] {
        assert_cases(&[
            Case {
                bug: "bug6",
                recipe: "queue",
                variant,
                clients: 2,
                faults: "connection-loss=1",
                property: "exactly_once",
                signatures: &["exactly_once/item-lost"],
            },
            Case {
                bug: "bug6",
                recipe: "queue",
                variant,
                clients: 2,
                faults: "connection-loss=1",
                property: "no_leaks",
                signatures: &["no_leaks/never-deleted", "exactly_once/item-lost"],
            },
        ]);
    }
}

#[test]
fn barrier_shared_lock_and_curator_lock_counterexamples_name_their_mechanisms() {
    assert_cases(&[
        Case {
            bug: "bug5a",
            recipe: "barrier",
            variant: "original_shared_host",
            clients: 2,
            faults: "none",
            property: "no_stuck_waiter",
            signatures: &["liveness/name-collision"],
        },
        Case {
            bug: "bug5b",
            recipe: "barrier",
            variant: "original",
            clients: 2,
            faults: "none",
            property: "no_stuck_waiter",
            signatures: &["liveness/children-left-before-read"],
        },
        Case {
            bug: "bug2 (shared lock)",
            recipe: "shared_lock",
            variant: "original",
            clients: 2,
            faults: "connection-loss=1",
            property: "no_stuck_waiter",
            // The blind retry's second node waits on the first, which its
            // client does not know it has: an orphan.
            signatures: &["liveness/orphan-node"],
        },
        Case {
            bug: "bug2 (shared lock)",
            recipe: "shared_lock",
            variant: "original",
            clients: 2,
            faults: "connection-loss=1",
            property: "no_leaks",
            signatures: &["no_leaks/orphan-create"],
        },
        Case {
            bug: "bug7",
            recipe: "curator_lock",
            variant: "original",
            clients: 2,
            faults: "none",
            property: "no_leaks",
            signatures: &["no_leaks/parent-never-deleted"],
        },
    ]);
}
