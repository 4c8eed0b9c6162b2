//! Model of the barriers (seed 001 tutorial `Barrier`, the documented double
//! barrier; `zk_recipes::barrier`).
//!
//! Protocol: each member creates a child of `/b1`; enter waits until the
//! root has `size` children; leave deletes the member's child and waits
//! until none is left. The fixed double barrier adds a `ready` node and the
//! documented leave protocol.
//!
//! Configuration: `/b1` exists; all N clients are members (size N); each
//! enters, then leaves if it entered. Hosts are `host-<c>` (one each), or all `host` for
//! the shared-host variant (known bug 5a). Unique ids are 1..=N.
//!
//! Properties: `barrier` (nobody passes enter or leave before every member
//! called it), no leaked nodes, no stuck waiter, liveness; examples: the
//! barrier is passed, the workload can complete. Known bugs of `original` in
//! reach: 5a (shared host), 5b (leave race: stuck waiter).

use crate::model::{BarrierSteps, ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::properties;
use crate::setup::Setup;
use crate::workload::WorkStep;
use stateright::Property;
use zk_recipes::barrier::{BarrierCall, FixedBarrier, OriginalBarrier};
use zk_recipes::rename::RenameRecipe;
use zk_recipes::zk::{CreateMode, Path, Request};

/// The barrier root.
pub const ROOT: &str = "/b1";

fn root() -> Path {
    Path::new(ROOT).expect("valid path")
}

fn workload() -> Vec<WorkStep<BarrierCall>> {
    vec![
        WorkStep::always(BarrierCall::Enter),
        WorkStep::after_success(BarrierCall::Leave),
    ]
}

fn barrier_properties<R: ModelRecipe>() -> Vec<Property<RecipeModel<R>>> {
    vec![
        properties::barrier(),
        properties::no_leaks(),
        properties::no_stuck_waiter(),
        properties::liveness(),
        properties::barrier_passed(),
        properties::workload_can_complete(),
    ]
}

fn build<R: ModelRecipe<Call = BarrierCall> + RenameRecipe>(
    variant: &str,
    setup: &Setup,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let setup_requests = [Request::Create {
        path: root(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
    }];
    let oracles = Oracles {
        barrier: Some(BarrierSteps {
            enter: 0,
            leave: Some(1),
        }),
        ..Oracles::default()
    };
    let clients = ClientSpec::many(setup.clients, recipe, |_| workload());
    RecipeModel::new(
        format!("barrier/{variant}"),
        &setup_requests,
        clients,
        setup.faults,
        oracles,
    )
    .with_setup(setup)
    .with_renaming()
    .with_properties(barrier_properties())
}

/// The tutorial barrier, one host per member.
pub fn original(setup: &Setup) -> RecipeModel<OriginalBarrier> {
    let size = setup.clients;
    build("original", setup, |c| {
        OriginalBarrier::new(root(), size, format!("host-{c}"))
    })
}

/// The tutorial barrier with every member on one host (known bug 5a).
pub fn original_shared_host(setup: &Setup) -> RecipeModel<OriginalBarrier> {
    let size = setup.clients;
    build("original_shared_host", setup, |_| {
        OriginalBarrier::new(root(), size, "host")
    })
}

/// The documented double barrier.
pub fn fixed(setup: &Setup) -> RecipeModel<FixedBarrier> {
    let size = setup.clients;
    build("fixed", setup, |c| {
        FixedBarrier::new(root(), size, c as u64 + 1)
    })
}
