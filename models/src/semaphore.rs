//! Model of the semaphore with leases (`InterProcessSemaphoreV2`, seed 002;
//! `zk_recipes::semaphore`).
//!
//! Protocol (fixed): one EPHEMERAL_SEQUENTIAL ticket `_c_<id>-<count>-lease-`
//! per acquisition under a container; a client holds when the leases of its
//! ticket and all older ones fit in `max_leases`. The original takes a mutex
//! per lease and counts the children of `<path>/leases`.
//!
//! Configuration: nothing exists beforehand; `max_leases` is one less than
//! the number of clients (at least 1), so clients contend; each client asks
//! for one lease and returns it if it got it, once per cycle. Unique ids
//! are 1..=N.
//!
//! Properties: `mutual_exclusion` (never more than `max_leases` leases held
//! under live sessions), no leaked nodes, no stuck waiter, liveness;
//! examples: a lease is acquired, the workload can complete, and with expiry
//! a stale holder overlaps a live one.

use crate::model::{ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::properties::{self, names};
use crate::setup::Setup;
use crate::workload::{self, WorkStep};
use stateright::Property;
use zk_recipes::rename::RenameRecipe;
use zk_recipes::semaphore::{FixedSemaphore, OriginalSemaphore, SemaphoreCall};
use zk_recipes::zk::Path;

/// The semaphore's path.
pub const SEMAPHORE_PATH: &str = "/semaphores/db";

fn path() -> Path {
    Path::new(SEMAPHORE_PATH).expect("valid path")
}

/// The leases a model with `clients` clients has.
pub fn max_leases(clients: usize) -> u32 {
    clients.saturating_sub(1).max(1) as u32
}

fn workload(cycles: usize) -> Vec<WorkStep<SemaphoreCall>> {
    let acquire = SemaphoreCall::Acquire {
        count: 1,
        timeout_ms: None,
    };
    workload::hold_cycles(acquire, SemaphoreCall::Return, cycles)
}

fn semaphore_properties<R: ModelRecipe>(setup: &Setup) -> Vec<Property<RecipeModel<R>>> {
    let mut list = vec![
        properties::mutual_exclusion(names::MUTUAL_EXCLUSION),
        properties::no_leaks(),
        properties::no_stuck_waiter(),
        properties::liveness(),
        properties::acquired(names::LOCK_ACQUIRED),
        properties::workload_can_complete(),
    ];
    list.extend(properties::expiry_examples(setup));
    list
}

fn build<R: ModelRecipe<Call = SemaphoreCall> + RenameRecipe>(
    variant: &str,
    setup: &Setup,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let oracles = Oracles {
        max_leases: Some(max_leases(setup.clients)),
        ..Oracles::default()
    };
    let clients = ClientSpec::many(setup.clients, recipe, |_| workload(setup.cycles));
    RecipeModel::new(
        format!("semaphore/{variant}"),
        &[],
        clients,
        setup.faults,
        oracles,
    )
    .with_setup(setup)
    .with_renaming()
    .with_properties(semaphore_properties(setup))
}

/// Curator 2.5.0's V2, bugs included.
pub fn original(setup: &Setup) -> RecipeModel<OriginalSemaphore> {
    let leases = max_leases(setup.clients);
    build("original", setup, |c| {
        OriginalSemaphore::new(path(), leases, c as u64 + 1)
    })
}

/// One ticket for all leases, FIFO.
pub fn fixed(setup: &Setup) -> RecipeModel<FixedSemaphore> {
    let leases = max_leases(setup.clients);
    build("fixed", setup, |c| {
        FixedSemaphore::new(path(), leases, c as u64 + 1)
    })
}
