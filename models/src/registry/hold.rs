//! The generic model of a hold recipe (a lock, an election, a semaphore)
//! registered with [`super::Variant::hold`]: built from the same
//! constructor and calls the simulator runs, with the properties of the
//! recipe's kind. A user's lock is model-checked without writing a model.
//!
//! Setup: the recipe's directory (and its ancestors) exists when the
//! variant needs it. Workload: client `c` acquires with the `c`-th acquire
//! call (round robin over several, e.g. read and write), then releases if
//! it holds; `setup.cycles` times. Clients get unique ids `1..=N`.
//!
//! Properties: the safety property of the kind (mutual exclusion, one
//! leader), fenced mutual exclusion (not for a semaphore, whose holders
//! share the resource), no leaked nodes, no stuck waiter, liveness; the
//! examples "acquired" and "the workload can complete"; with expiry in the
//! budget, that expiry is reported and a stale holder can overlap.

use super::{Make, ModelSite};
use crate::model::{ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::properties::{self, names};
use crate::setup::Setup;
use crate::workload::hold_cycles;
use stateright::Property;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_sim::scenario::{ClientContext, RecipeKind};
use zk_sim::world::adapters::HoldCalls;

/// The model of one hold variant for `setup`.
pub(super) fn model<R: ModelRecipe>(
    site: &ModelSite,
    setup: &Setup,
    calls: &HoldCalls<R::Call>,
    make: &Make<R>,
) -> RecipeModel<R> {
    let clients = ClientSpec::many(
        setup.clients,
        |c| {
            make(&ClientContext::for_model(
                site.path.clone(),
                c,
                setup.clients,
            ))
        },
        |c| {
            let acquire = &calls.acquire[c % calls.acquire.len()];
            hold_cycles(acquire.clone(), calls.release.clone(), setup.cycles)
        },
    );
    let oracles = Oracles {
        max_leases: (site.kind == RecipeKind::Semaphore).then_some(1),
        ..Oracles::default()
    };
    RecipeModel::new(
        format!("{}/{}", site.recipe, site.variant),
        &setup_requests(site),
        clients,
        setup.faults,
        oracles,
    )
    .with_setup(setup)
    .with_properties(hold_properties(site.kind, setup))
}

/// The recipe's directory and its ancestors, top-down, when it must exist.
pub(super) fn setup_requests(site: &ModelSite) -> Vec<Request> {
    if !site.needs_existing_path {
        return Vec::new();
    }
    let mut chain = vec![site.path.clone()];
    while let Some(parent) = chain.last().and_then(Path::parent).filter(|p| !p.is_root()) {
        chain.push(parent);
    }
    chain
        .into_iter()
        .rev()
        .map(|path| Request::Create {
            path,
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        })
        .collect()
}

fn hold_properties<R: ModelRecipe>(
    kind: RecipeKind,
    setup: &Setup,
) -> Vec<Property<RecipeModel<R>>> {
    let (safety, acquired) = match kind {
        RecipeKind::Election => (names::ONE_LEADER, names::LEADER_ELECTED),
        _ => (names::MUTUAL_EXCLUSION, names::LOCK_ACQUIRED),
    };
    let mut list = vec![properties::mutual_exclusion(safety)];
    if kind != RecipeKind::Semaphore {
        list.push(properties::fenced_mutual_exclusion());
    }
    list.extend([
        properties::no_leaks(),
        properties::no_stuck_waiter(),
        properties::liveness(),
        properties::acquired(acquired),
        properties::workload_can_complete(),
    ]);
    list.extend(properties::expiry_examples(setup));
    list
}
