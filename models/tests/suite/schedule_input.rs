//! Schedule files are user input (`zkcheck replay FILE`): every value the
//! replay cannot use is refused by `Schedule::parse` with the file, the
//! line and the dotted key, never a panic or a hang; and the replay turns
//! a step that cannot be applied into an error, whatever the step order.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};
use zk_models::replay::ReplayError;
use zk_models::schedule::{
    op_spec, Schedule, ScheduleError, ScheduleStep, StepField, MAX_CLIENTS, MAX_STEPS, OPS,
};
use zk_models::Registry;
use zk_models::{Action, ModelRecipe, RecipeModel, Setup};

const FILE: &str = "sched.toml";

/// A valid schedule: lock/original with two clients, three steps (lines
/// 9, 14 and 18 open `step[0]`, `step[1]` and `step[2]`).
const VALID: &str = r#"recipe = "lock"
variant = "original"
clients = 2
faults = "connection-loss=1"
property = "mutual_exclusion"
expect = "violation"

# the first client calls
[[step]]
client = 0
op = "call"
call = "Lock"

[[step]]
client = 0
op = "send"

[[step]]
client = 0
op = "deliver"
"#;

fn parse(text: &str) -> Result<Schedule, ScheduleError> {
    Schedule::parse(Path::new(FILE), text, &Registry::builtin())
}

/// `VALID` with `from` replaced by `to` (once; `from` must be there).
fn edited(from: &str, to: &str) -> String {
    assert!(VALID.contains(from), "{from:?} not in the valid schedule");
    VALID.replacen(from, to, 1)
}

/// The error of `text`, checked to be at `line` and `key`; its display.
fn refused(text: &str, line: usize, key: &str) -> String {
    let error = parse(text).expect_err("the schedule should be refused");
    let shown = error.to_string();
    assert_eq!((error.line, error.key.as_str()), (line, key), "{shown}");
    assert!(
        shown.starts_with(&format!("{FILE}:{line}: key `{key}`: ")),
        "{shown}"
    );
    shown
}

#[test]
fn the_valid_schedule_parses() {
    let schedule = parse(VALID).unwrap();
    assert_eq!(schedule.clients, 2);
    assert_eq!(schedule.steps.len(), 3);
    assert_eq!(schedule.steps[0].call.as_deref(), Some("Lock"));
}

#[test]
fn zero_clients_are_refused() {
    let shown = refused(&edited("clients = 2", "clients = 0"), 3, "clients");
    assert!(shown.contains(&format!("1..={MAX_CLIENTS}")), "{shown}");
}

#[test]
fn a_hundred_thousand_clients_are_refused_quickly() {
    let text = edited("clients = 2", "clients = 100000");
    let started = Instant::now();
    let shown = refused(&text, 3, "clients");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(shown.contains("16") && shown.contains("100000"), "{shown}");
    // Negative or fractional counts are TOML type errors at the same key.
    refused(&edited("clients = 2", "clients = -1"), 3, "clients");
    refused(&edited("clients = 2", "clients = 1.5"), 3, "clients");
}

#[test]
fn an_unknown_top_level_key_is_refused() {
    let text = edited(
        "expect = \"violation\"\n",
        "expect = \"violation\"\ncolour = \"red\"\n",
    );
    let shown = refused(&text, 7, "colour");
    assert!(shown.contains("unknown field `colour`"), "{shown}");
}

#[test]
fn an_unknown_key_inside_a_step_names_the_step_and_its_line() {
    let text = edited("op = \"deliver\"\n", "op = \"deliver\"\nteleport = true\n");
    let shown = refused(&text, 21, "step[2].teleport");
    assert!(shown.contains("unknown field `teleport`"), "{shown}");
    // A step without its op: the step is named.
    let text = edited("op = \"send\"\n", "");
    let shown = parse(&text).unwrap_err().to_string();
    assert!(shown.contains("missing field `op`"), "{shown}");
}

#[test]
fn a_step_client_out_of_range_is_refused() {
    let text = edited("client = 0\nop = \"send\"", "client = 2\nop = \"send\"");
    let shown = refused(&text, 15, "step[1].client");
    assert!(shown.contains("no client 2"), "{shown}");
    let text = edited(
        "client = 0\nop = \"send\"",
        "client = 99999999999\nop = \"send\"",
    );
    refused(&text, 15, "step[1].client");
}

#[test]
fn only_the_servers_reap_step_names_no_client() {
    let text = edited("client = 0\nop = \"send\"\n", "op = \"send\"\n");
    let shown = refused(&text, 15, "step[1].op");
    assert!(shown.contains("op send needs `client`"), "{shown}");
    let shown = refused(
        &edited("op = \"deliver\"", "op = \"reap\""),
        19,
        "step[2].client",
    );
    assert!(shown.contains("op reap takes no `client`"), "{shown}");
    let schedule = parse(&edited("client = 0\nop = \"deliver\"", "op = \"reap\"")).unwrap();
    assert_eq!(schedule.steps[2], ScheduleStep::of(Action::Reap));
    assert!(!schedule.to_toml().contains("client = 0\nop = \"reap\""));
}

#[test]
fn an_unknown_op_is_refused_with_the_known_ones() {
    let shown = refused(
        &edited("op = \"call\"", "op = \"teleport\""),
        11,
        "step[0].op",
    );
    for spec in OPS {
        assert!(shown.contains(spec.name), "{shown}");
    }
}

#[test]
fn an_op_takes_exactly_its_fields() {
    // A field the op does not take, at that field's line.
    let text = edited("op = \"send\"\n", "op = \"send\"\nindex = 1\n");
    let shown = refused(&text, 17, "step[1].index");
    assert!(shown.contains("op send takes no `index`"), "{shown}");
    let text = edited("op = \"deliver\"\n", "op = \"deliver\"\ncall = \"Lock\"\n");
    refused(&text, 21, "step[2].call");
    let text = edited("op = \"deliver\"\n", "op = \"deliver\"\nsession = 513\n");
    refused(&text, 21, "step[2].session");
    // A field the op needs, at the op.
    let shown = refused(&edited("call = \"Lock\"\n", ""), 11, "step[0].op");
    assert!(shown.contains("op call needs `call`"), "{shown}");
    let text = edited("op = \"deliver\"", "op = \"spurious_watch\"");
    refused(&text, 20, "step[2].op");
    // Every op, with every field, against its table.
    for spec in OPS {
        for field in StepField::ALL {
            let value = match field {
                StepField::Call => "\"Lock\"",
                StepField::Session => "513",
                _ => "1",
            };
            let mut step = format!("op = \"{}\"\n", spec.name);
            for required in spec.required {
                if *required != field {
                    step.push_str(&format!("{} = 1\n", required.name()));
                }
            }
            step.push_str(&format!("{} = {value}\n", field.name()));
            let step = step.replace("call = 1", "call = \"Lock\"");
            // Two servers, so that `server = 1` names one.
            let text = edited("client = 0\nop = \"deliver\"\n", &step).replacen(
                "clients = 2\n",
                "clients = 2\nservers = 2\n",
                1,
            );
            let takes = spec.required.contains(&field) || spec.optional.contains(&field);
            assert_eq!(
                parse(&text).is_ok(),
                takes,
                "{} {}",
                spec.name,
                field.name()
            );
        }
    }
}

#[test]
fn every_op_the_model_writes_is_known_and_its_step_checks() {
    let actions = [
        Action::Call(1),
        Action::Send {
            client: 1,
            order: 0,
        },
        Action::Send {
            client: 1,
            order: 3,
        },
        Action::Deliver(1),
        Action::FireTimer(1),
        Action::Reconnect {
            client: 1,
            server: 0,
        },
        Action::LearnExpiry {
            client: 1,
            server: 0,
        },
        Action::Disconnect(1),
        Action::LoseRequest {
            client: 1,
            applied: true,
        },
        Action::LoseRequest {
            client: 1,
            applied: false,
        },
        Action::Expire {
            client: 1,
            order: 0,
        },
        Action::Reorder {
            client: 1,
            index: 2,
        },
        Action::Spurious {
            client: 1,
            watch: 0,
        },
        Action::Reap,
    ];
    let mut schedule = parse(VALID).unwrap();
    for action in actions {
        assert!(op_spec(action.op_name()).is_some(), "{action}");
        let mut step = ScheduleStep::of(action);
        if let Action::Call(_) = action {
            step.call = Some("Lock".into());
        }
        if let Action::LearnExpiry { .. } | Action::Reconnect { .. } = action {
            step.session = Some(514);
        }
        schedule.steps = vec![step];
        let text = schedule.to_toml();
        assert_eq!(parse(&text).as_ref(), Ok(&schedule), "{action}: {text}");
    }
}

#[test]
fn a_bad_expect_is_refused() {
    let shown = refused(&edited("\"violation\"", "\"maybe\""), 6, "expect");
    assert!(
        shown.contains("violation") && shown.contains("example"),
        "{shown}"
    );
}

#[test]
fn a_bad_fault_budget_is_refused() {
    let shown = refused(&edited("connection-loss=1", "meteor=1"), 4, "faults");
    assert!(shown.contains("unknown fault kind"), "{shown}");
    refused(&edited("connection-loss=1", "expiry=999"), 4, "faults");
    assert!(parse(&edited("connection-loss=1", "none")).is_ok());
}

#[test]
fn too_many_steps_are_refused_with_the_cap() {
    let mut text = VALID.to_string();
    for _ in 0..MAX_STEPS - 3 {
        text.push_str("[[step]]\nclient = 1\nop = \"deliver\"\n");
    }
    let schedule = parse(&text).expect("exactly the cap");
    assert_eq!(schedule.steps.len(), MAX_STEPS);
    text.push_str("[[step]]\nclient = 1\nop = \"deliver\"\n");
    let line = VALID.lines().count() + 3 * (MAX_STEPS - 3) + 1;
    let shown = refused(&text, line, &format!("step[{MAX_STEPS}]"));
    assert!(
        shown.contains(&format!("at most {MAX_STEPS} steps")),
        "{shown}"
    );
}

#[test]
fn cycles_outside_the_model_s_range_are_refused() {
    for cycles in ["0", "9", "1000000"] {
        let text = edited(
            "clients = 2\n",
            &format!("clients = 2\ncycles = {cycles}\n"),
        );
        let shown = refused(&text, 4, "cycles");
        assert!(shown.contains("1..=8"), "{shown}");
    }
    let text = edited("clients = 2\n", "clients = 2\ncycles = 2\n");
    assert_eq!(parse(&text).unwrap().cycles, 2);
    assert_eq!(parse(VALID).unwrap().cycles, 1, "absent: one cycle");
}

#[test]
fn an_unknown_recipe_or_variant_is_refused_with_the_known_ones() {
    let shown = refused(&edited("\"lock\"", "\"padlock\""), 1, "recipe");
    assert!(shown.contains("padlock"), "{shown}");
    for recipe in Registry::builtin().names() {
        assert!(shown.contains(recipe), "{shown}");
    }
    let shown = refused(&edited("\"original\"", "\"broken\""), 2, "variant");
    assert!(
        shown.contains("broken") && shown.contains("original, fixed"),
        "{shown}"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for (open, close) in [("[", "]"), ("{ a = ", "}")] {
        let depth = 100_000;
        let text = format!(
            "{VALID}x = {}1{}\n",
            open.repeat(depth),
            close.repeat(depth)
        );
        let error = parse(&text).unwrap_err();
        assert_eq!(error.line, 21, "{error}");
    }
}

#[test]
fn a_megabyte_value_is_not_echoed() {
    let huge = "x".repeat(1 << 20);
    let texts = [
        edited("\"lock\"", &format!("\"{huge}\"")),
        edited("\"original\"", &format!("\"{huge}\"")),
        edited("\"violation\"", &format!("\"{huge}\"")),
        edited("\"connection-loss=1\"", &format!("\"{huge}\"")),
        edited("\"call\"", &format!("\"{huge}\"")),
        edited("clients = 2", &format!("clients = \"{huge}\"")),
        edited("clients = 2", &format!("{huge} = 2")),
        edited(
            "op = \"deliver\"\n",
            &format!("op = \"deliver\"\n{huge} = 1\n"),
        ),
    ];
    for text in texts {
        let shown = parse(&text).unwrap_err().to_string();
        assert!(
            shown.len() < 600,
            "{} chars: {}",
            shown.len(),
            &shown[..600]
        );
        assert!(shown.contains("xxxxxxxxxx…"), "{shown}");
    }
}

#[test]
fn a_real_schedule_round_trips_parses_and_replays() {
    let report = common::check("lock", "original", 2, "connection-loss=1");
    let entry = Registry::builtin().model("lock", "original").unwrap();
    let mut replayed = 0;
    for property in &report.properties {
        let Some(schedule) = report.schedule(property) else {
            continue;
        };
        let text = schedule.to_toml();
        let parsed = parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
        assert_eq!(parsed, schedule);
        entry
            .replay(&parsed)
            .expect("a schedule the model wrote replays");
        replayed += 1;
    }
    assert!(replayed > 0);
}

#[test]
fn a_step_that_cannot_be_applied_is_an_error_at_its_step() {
    let entry = Registry::builtin().model("lock", "original").unwrap();
    // Reconnecting a connected client (the stepper asserts on it).
    let text = edited("op = \"deliver\"", "op = \"reconnect\"");
    let error = entry.replay(&parse(&text).unwrap()).unwrap_err();
    assert!(
        matches!(&error, ReplayError::Step { step: 3, message, .. } if message.contains("not disconnected")),
        "{error}"
    );
    let shown = zk_models::schedule_check::replay_error(Path::new(FILE), &text, &error).to_string();
    assert!(
        shown.starts_with(&format!("{FILE}:18: key `step[2]`: ")),
        "{shown}"
    );
    // A second call while the first waits for its outcome.
    let text = edited("op = \"send\"", "op = \"call\"\ncall = \"Lock\"");
    let error = entry.replay(&parse(&text).unwrap()).unwrap_err();
    assert!(error.to_string().contains("still waits"), "{error}");
    // A megabyte call is not echoed.
    let text = edited("\"Lock\"", &format!("\"{}\"", "L".repeat(1 << 20)));
    let error = entry.replay(&parse(&text).unwrap()).unwrap_err();
    let shown = zk_models::schedule_check::replay_error(Path::new(FILE), &text, &error).to_string();
    assert!(shown.len() < 400, "{}", &shown[..400]);
}

#[test]
fn expiring_again_and_again_ends_in_an_error_not_a_panic() {
    let entry = Registry::builtin().model("lock", "fixed").unwrap();
    let mut schedule = parse(&edited("\"original\"", "\"fixed\"")).unwrap();
    schedule.faults = "expiry=255".into();
    schedule.steps.clear();
    for _ in 0..300 {
        schedule.steps.push(ScheduleStep::of(Action::Expire {
            client: 0,
            order: 0,
        }));
        schedule.steps.push(ScheduleStep::of(Action::LearnExpiry {
            client: 0,
            server: 0,
        }));
    }
    let error = entry.replay(&schedule).unwrap_err();
    assert!(
        matches!(error, ReplayError::Step { step: 512, .. }),
        "{error}"
    );
}

/// The calls of each client's workload, as a schedule writes them.
fn calls<R: ModelRecipe>(model: RecipeModel<R>) -> Vec<Vec<String>> {
    (0..model.clients.len())
        .map(|c| {
            model
                .workload(c)
                .iter()
                .map(|step| format!("{:?}", step.call))
                .collect()
        })
        .collect()
}

fn workload_calls(recipe: &str, variant: &str, clients: usize) -> Vec<Vec<String>> {
    use zk_models::{barrier, curator_lock, election, lock, queue, semaphore, shared_lock};
    let setup = Setup::new(clients);
    match (recipe, variant) {
        ("lock", "original") => calls(lock::original(&setup)),
        ("lock", "fixed") => calls(lock::fixed(&setup)),
        ("lock", "unsynced") => calls(lock::unsynced(&setup)),
        ("curator_lock", "original") => calls(curator_lock::original(&setup)),
        ("curator_lock", "fixed") => calls(curator_lock::fixed(&setup)),
        ("semaphore", "original") => calls(semaphore::original(&setup)),
        ("semaphore", "fixed") => calls(semaphore::fixed(&setup)),
        ("shared_lock", "original") => calls(shared_lock::original(&setup)),
        ("shared_lock", "fixed") => calls(shared_lock::fixed(&setup)),
        ("election", "original") => calls(election::original(&setup)),
        ("election", "fixed") => calls(election::fixed(&setup)),
        ("queue", "original") => calls(queue::original(&setup)),
        ("queue", "tutorial_original") => calls(queue::tutorial_original(&setup)),
        ("queue", "fixed") => calls(queue::fixed(&setup)),
        ("barrier", "original") => calls(barrier::original(&setup)),
        ("barrier", "original_shared_host") => calls(barrier::original_shared_host(&setup)),
        ("barrier", "fixed") => calls(barrier::fixed(&setup)),
        other => panic!("no workload for {other:?}: add the new registered variant here"),
    }
}

/// Random steps of every op on every model (a small deterministic fuzzer):
/// a random step is appended and the schedule replayed; one that cannot be
/// applied is a step error (then dropped), never a panic.
#[test]
fn random_step_orders_replay_or_fail_without_panicking() {
    let mut seed: u64 = 0x5eed_1234_abcd;
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    for (recipe, variant, entry) in zk_models::Registry::builtin().models() {
        let (recipe, variant) = (recipe.as_str(), variant.as_str());
        let clients = 2 + next(2) as usize;
        let calls = workload_calls(recipe, variant, clients);
        let (mut applied, mut refused) = (0, 0);
        for _ in 0..6 {
            let mut schedule = parse(VALID).unwrap();
            schedule.recipe = recipe.into();
            schedule.variant = variant.into();
            schedule.clients = clients;
            schedule.servers = 1 + next(2) as usize;
            // A property the model has (VALID's is a lock's).
            let setup = Setup::new(clients)
                .with_cycles(schedule.cycles)
                .with_servers(schedule.servers)
                .with_revalidate(schedule.revalidate)
                .with_faults(schedule.faults.parse().unwrap_or_default());
            schedule.property = entry.property_names(&setup)[0].into();
            schedule.steps.clear();
            for _ in 0..60 {
                let spec = &OPS[next(OPS.len() as u64) as usize];
                if spec.name == "apply" && schedule.servers == 1 {
                    continue;
                }
                let client = next(clients as u64) as usize;
                let mut step = ScheduleStep {
                    op: spec.name.into(),
                    ..Default::default()
                };
                for field in spec.required.iter().chain(spec.optional) {
                    match field {
                        StepField::Client => step.client = Some(client),
                        StepField::Call => {
                            let own = &calls[client];
                            step.call = Some(own[next(own.len() as u64) as usize].clone())
                        }
                        StepField::Order => step.order = Some(next(4) as u16),
                        StepField::Index => step.index = Some(next(4) as u8),
                        StepField::Watch => step.watch = Some(next(3) as u8),
                        StepField::Session
                            if spec.required.contains(&StepField::Session) || next(2) == 0 =>
                        {
                            step.session = Some(0x100 * (next(3) as i64 + 2) + client as i64 + 1)
                        }
                        StepField::Session => {}
                        StepField::Server if spec.name == "apply" => step.server = Some(1),
                        StepField::Server if next(2) == 0 => {
                            step.server = Some(next(schedule.servers as u64) as u8)
                        }
                        StepField::Server => {}
                    }
                }
                schedule.steps.push(step);
                schedule
                    .validate(&Registry::builtin())
                    .expect("a valid schedule");
                match entry.replay(&schedule) {
                    Ok(_) => applied += 1,
                    Err(ReplayError::Step { step, .. }) => {
                        assert_eq!(step, schedule.steps.len());
                        schedule.steps.pop();
                        refused += 1;
                    }
                    Err(error) => panic!("{error}"),
                }
            }
        }
        assert!(
            applied > 20 && refused > 0,
            "{}/{}: {applied} applied, {refused} refused",
            recipe,
            variant
        );
    }
}

#[test]
fn servers_and_server_fields_are_checked_with_their_lines() {
    let shown = refused(
        &edited("clients = 2", "clients = 2\nservers = 3"),
        4,
        "servers",
    );
    assert!(shown.contains("must be in 1..=2, got 3"), "{shown}");
    // A server the schedule's model does not have.
    let text = edited("op = \"deliver\"\n", "op = \"reconnect\"\nserver = 1\n");
    let shown = refused(&text, 21, "step[2].server");
    assert!(
        shown.contains("no server 1 in a schedule of 1 server(s)"),
        "{shown}"
    );
    // The leader applies as it commits: `apply` names a follower.
    let two = |step: &str| {
        edited("client = 0\nop = \"deliver\"\n", step).replacen(
            "clients = 2\n",
            "clients = 2\nservers = 2\n",
            1,
        )
    };
    let shown = refused(&two("op = \"apply\"\nserver = 0\n"), 21, "step[2].server");
    assert!(shown.contains("server 0 leads"), "{shown}");
    let shown = refused(&two("op = \"apply\"\n"), 20, "step[2].op");
    assert!(shown.contains("op apply needs `server`"), "{shown}");
    let shown = refused(
        &two("op = \"apply\"\nserver = 1\nclient = 0\n"),
        22,
        "step[2].client",
    );
    assert!(shown.contains("op apply takes no `client`"), "{shown}");
    let schedule = parse(&two("op = \"apply\"\nserver = 1\n")).unwrap();
    assert_eq!((schedule.servers, schedule.steps[2].server), (2, Some(1)));
    assert!(schedule.to_toml().contains("servers = 2"));
    // Reconnects are revalidated unless the header says otherwise, which
    // only a schedule of two servers may.
    assert!(schedule.revalidate);
    assert!(!schedule.to_toml().contains("revalidate"));
    let unrevalidated = two("op = \"apply\"\nserver = 1\n").replacen(
        "servers = 2\n",
        "servers = 2\nrevalidate = false\n",
        1,
    );
    let read = parse(&unrevalidated).unwrap();
    assert!(!read.revalidate);
    assert!(read.to_toml().contains("revalidate = false"));
    let shown = refused(
        &edited("clients = 2", "clients = 2\nrevalidate = false"),
        4,
        "revalidate",
    );
    assert!(shown.contains("one server has none"), "{shown}");
    // A follower with nothing to apply: the replay names the step.
    let entry = Registry::builtin().model("lock", "original").unwrap();
    let error = entry.replay(&schedule).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("server 1 has applied every committed transaction"),
        "{error}"
    );
}
