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
//! reach: 5a (shared host), 5b (leave race: stuck waiter). [`model_of`]
//! builds the same model for any barrier recipe and its calls (the
//! registry's generic barrier model, `Variant::barrier`).

use crate::model::{BarrierSteps, ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::properties;
use crate::setup::Setup;
use crate::workload::WorkStep;
use stateright::Property;
use zk_recipes::barrier::{BarrierCall, FixedBarrier, OriginalBarrier};
use zk_recipes::rename::RenameRecipe;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_sim::world::adapters::BarrierCalls;

/// The barrier root.
pub const ROOT: &str = "/b1";

fn root() -> Path {
    Path::new(ROOT).expect("valid path")
}

/// Enter, then leave if the client entered.
fn workload<C: Clone>(calls: &BarrierCalls<C>) -> Vec<WorkStep<C>> {
    vec![
        WorkStep::always(calls.enter.clone()),
        WorkStep::after_success(calls.leave.clone()),
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
    let site = BarrierSite {
        name: format!("barrier/{variant}"),
        setup_requests: vec![Request::Create {
            path: root(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        }],
    };
    let calls = BarrierCalls::new(BarrierCall::Enter, BarrierCall::Leave);
    model_of(&site, setup, &calls, recipe).with_renaming()
}

/// Where a barrier model runs: its name for reports and the requests that
/// make the nodes existing before the clients start.
#[derive(Clone, Debug)]
pub struct BarrierSite {
    pub name: String,
    pub setup_requests: Vec<Request>,
}

/// The barrier model of any barrier recipe (`recipe(c)` is client `c`'s
/// machine, of a barrier of `setup.clients` members; `calls` how to enter
/// and leave): every client enters, then leaves if it entered; the barrier
/// properties. Arrivals are not staggered as in the simulator: the model
/// interleaves every member's steps in every order anyway, so a member
/// arriving while others pass is among the explored orders. Without
/// renaming.
pub fn model_of<R: ModelRecipe>(
    site: &BarrierSite,
    setup: &Setup,
    calls: &BarrierCalls<R::Call>,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let oracles = Oracles {
        barrier: Some(BarrierSteps {
            enter: 0,
            leave: Some(1),
        }),
        ..Oracles::default()
    };
    let clients = ClientSpec::many(setup.clients, recipe, |_| workload(calls));
    RecipeModel::new(
        site.name.clone(),
        &site.setup_requests,
        clients,
        setup.faults,
        oracles,
    )
    .with_setup(setup)
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
