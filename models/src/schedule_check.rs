//! A schedule file checked against the registry: [`Schedule::parse`] and
//! [`Schedule::validate`] (the recipe and variant have a model, the
//! property is one of its, the steps are well formed), a replay's error
//! located at its key ([`replay_error`]), and an initial state checked by
//! replaying no steps ([`initial_state_error`]). Above the registry and the
//! replay; the schedule's format (`crate::schedule`) is below both.

use crate::faults::FaultBudget;
use crate::registry::{ModelVariant, Registry, RegistryError};
use crate::replay::ReplayError;
use crate::schedule::{
    client_of, clip, op_spec, Schedule, ScheduleError, StepField, EXPECTS, MAX_CLIENTS, MAX_STEPS,
    OPS, REACH,
};
use crate::setup::{Setup, MAX_CYCLES, MAX_SERVERS};
use std::path::Path;

impl Schedule {
    /// Reads and checks the schedule `text` of `file` (named in errors):
    /// its recipe and variant must have a model in `registry`.
    pub fn parse(file: &Path, text: &str, registry: &Registry) -> Result<Schedule, ScheduleError> {
        let schedule =
            Schedule::from_toml(text).map_err(|e| ScheduleError::from_toml(file, text, &e))?;
        schedule
            .validate(registry)
            .map_err(|(key, message)| ScheduleError::at_key(file, text, &key, message))?;
        Ok(schedule)
    }

    /// The schedule's `property` is one the model checks for the
    /// schedule's setup (or, for a lasso, `progress`): a replay judges the
    /// run by that property, and a name it does not know would be judged by
    /// nothing.
    fn check_property(&self, model: &ModelVariant) -> Result<(), String> {
        if self.cycle_start.is_some() && self.property == crate::lasso::PROGRESS {
            return Ok(());
        }
        match (self.property == REACH, &self.state) {
            (true, Some(_)) => return Ok(()),
            (true, None) => {
                return Err(format!(
                    "`{REACH}` needs the `state` the steps lead to (16 hex digits)"
                ))
            }
            (false, Some(_)) => {
                return Err(format!("a `state` goes with `property = \"{REACH}\"` only"))
            }
            (false, None) => {}
        }
        let setup = Setup::new(self.clients)
            .with_cycles(self.cycles)
            .with_servers(self.servers)
            .with_revalidate(self.revalidate)
            .with_faults(self.faults.parse().unwrap_or_default());
        let names = model.property_names(&setup);
        if names.contains(&self.property.as_str()) {
            return Ok(());
        }
        let lasso = match self.cycle_start {
            Some(_) => format!(" (a lasso's is `{}`)", crate::lasso::PROGRESS),
            None => String::new(),
        };
        Err(format!(
            "`{}` is not a property of {}/{} with {} client(s) (it has: {}){lasso}",
            clip(&self.property),
            clip(&self.recipe),
            clip(&self.variant),
            self.clients,
            names.join(", ")
        ))
    }

    /// Checks the values: the model exists in `registry` and is small
    /// enough, every step names a client of it and a known operation with
    /// the fields that operation takes. On error: the dotted key and the
    /// message.
    pub fn validate(&self, registry: &Registry) -> Result<(), (String, String)> {
        let at = |key: &str, message: String| Err((key.to_string(), message));
        let model = match registry.model(&self.recipe, &self.variant) {
            Ok(model) => model,
            Err(error) => {
                let key = match error {
                    RegistryError::UnknownRecipe { .. } => "recipe",
                    RegistryError::UnknownVariant { .. }
                    | RegistryError::NoModel { .. }
                    | RegistryError::AsyncRecipe { .. } => "variant",
                };
                return at(key, error.to_string());
            }
        };
        if !(1..=MAX_CLIENTS).contains(&self.clients) {
            return at(
                "clients",
                format!(
                    "must be in 1..={MAX_CLIENTS} (the model's limit), got {}",
                    self.clients
                ),
            );
        }
        if !(1..=MAX_CYCLES).contains(&self.cycles) {
            return at(
                "cycles",
                format!("must be in 1..={MAX_CYCLES}, got {}", self.cycles),
            );
        }
        if !(1..=MAX_SERVERS).contains(&self.servers) {
            return at(
                "servers",
                format!("must be in 1..={MAX_SERVERS}, got {}", self.servers),
            );
        }
        if !self.revalidate && self.servers == 1 {
            return at(
                "revalidate",
                "is about reconnects to a follower, and one server has none: set `servers = 2`, or leave `revalidate` out".into(),
            );
        }
        if let Err(error) = self.faults.parse::<FaultBudget>() {
            return at(
                "faults",
                format!(
                    "`{}` is not a fault budget: {error} (write KIND=BUDGET,... or none)",
                    clip(&self.faults)
                ),
            );
        }
        if let Err(message) = self.check_property(&model) {
            return at("property", message);
        }
        if let (Some(text), None) = (&self.state, self.expected_state()) {
            return at("state", format!("`{}` is not 16 hex digits", clip(text)));
        }
        if !EXPECTS.contains(&self.expect.as_str()) {
            return at(
                "expect",
                format!(
                    "`{}` is neither {}",
                    clip(&self.expect),
                    EXPECTS.join(" nor ")
                ),
            );
        }
        if self.steps.is_empty() {
            return at(
                "step",
                "the schedule has no steps: it shows nothing to replay (`zkcheck check` writes at least one `[[step]]`)".to_string(),
            );
        }
        if self.steps.len() > MAX_STEPS {
            return at(
                &format!("step[{MAX_STEPS}]"),
                format!(
                    "a schedule has at most {MAX_STEPS} steps, this one has {}",
                    self.steps.len()
                ),
            );
        }
        if let Err(message) = self.check_cycle_start() {
            return at("cycle_start", message);
        }
        self.initial_state()?;
        for (n, step) in self.steps.iter().enumerate() {
            let key = |field: &str| format!("step[{n}].{field}");
            let Some(spec) = op_spec(&step.op) else {
                let known: Vec<&str> = OPS.iter().map(|spec| spec.name).collect();
                return at(
                    &key("op"),
                    format!(
                        "unknown op `{}` (known: {})",
                        clip(&step.op),
                        known.join(", ")
                    ),
                );
            };
            if let Some(client) = step.client.filter(|&client| client >= self.clients) {
                return at(
                    &key("client"),
                    format!(
                        "no client {client} in a schedule of {} client(s) (clients count from 0)",
                        self.clients
                    ),
                );
            }
            if let Some(server) = step.server {
                if usize::from(server) >= self.servers {
                    return at(
                        &key("server"),
                        format!(
                            "no server {server} in a schedule of {} server(s) (servers count from 0)",
                            self.servers
                        ),
                    );
                }
                if server == 0 && step.op == "apply" {
                    return at(
                        &key("server"),
                        "server 0 leads: it applies each transaction as it commits; apply names a follower (1..)".to_string(),
                    );
                }
            }
            for field in StepField::ALL {
                let set = field.is_set(step);
                if set && !spec.takes(field) {
                    return at(
                        &key(field.name()),
                        format!("op {} takes no `{}`", spec.name, field.name()),
                    );
                }
                if !set && spec.required.contains(&field) {
                    return at(
                        &key("op"),
                        format!("op {} needs `{}`", spec.name, field.name()),
                    );
                }
            }
        }
        Ok(())
    }
}

/// A step the replay could not apply, located at that step's `[[step]]`.
pub fn replay_error(file: &Path, source: &str, error: &ReplayError) -> ScheduleError {
    match error {
        ReplayError::Clients { .. } => {
            ScheduleError::at_key(file, source, "clients", error.to_string())
        }
        ReplayError::Initial { key, .. } => {
            ScheduleError::at_key(file, source, key, error.to_string())
        }
        ReplayError::Step {
            step,
            client,
            op,
            message,
        } => ScheduleError::at_key(
            file,
            source,
            &format!("step[{}]", step.saturating_sub(1)),
            format!(
                "cannot replay step {step} ({}op {}): {message}",
                client_of(client),
                clip(op)
            ),
        ),
    }
}

/// Checks that `setup`'s initial state can be made for `variant`'s model:
/// every node new with its parent there, every counter on an existing
/// parent (see [`InitialState::check_against`](crate::setup::InitialState::check_against)). On error the `[initial]`
/// key it is about (`initial.node[2].path`: the nodes in the setup's
/// order) and the message. The type-erased model builds its setup server
/// only for a check or a replay, so this replays a schedule of no steps
/// from the state: it stops at a state it cannot make, before any step.
pub fn initial_state_error(
    variant: &ModelVariant,
    setup: &crate::setup::Setup,
) -> Result<(), (String, String)> {
    if setup.initial.is_default() {
        return Ok(());
    }
    let probe = Schedule {
        recipe: String::new(),
        variant: String::new(),
        clients: setup.clients,
        cycles: setup.cycles,
        servers: setup.servers,
        revalidate: setup.revalidate,
        faults: "none".into(),
        property: String::new(),
        expect: "example".into(),
        cycle_start: None,
        initial: None,
        state: None,
        steps: Vec::new(),
    }
    .with_initial_state(&setup.initial);
    match variant.replay(&probe) {
        Err(ReplayError::Initial { key, message }) => Err((key, message)),
        _ => Ok(()),
    }
}
