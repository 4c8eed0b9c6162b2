//! Model of the distributed queues (seed 000 `DistributedQueue`, seed 001
//! tutorial `Queue`, and the fixed exactly-once queue; `zk_recipes::queue`).
//!
//! Protocol: offering creates a PERSISTENT_SEQUENTIAL child of `/q` holding
//! the item; taking lists the children, reads the smallest and deletes it
//! (whoever deletes it owns it); a blocking take on an empty queue waits on
//! a child watch. The fixed queue pairs each write with a receipt node in
//! one multi, so a retry after a connection loss knows whether it applied.
//!
//! Configuration: `/q` exists; client 0 offers `cycles` distinct items per
//! other client (`item-1`, ...), every other client takes `cycles` of them
//! (blocking); `cycles` is `setup.cycles` (`check --cycles`), 1 by default:
//! with 2 clients, one item. Unique ids are 1..=N.
//!
//! Properties: `exactly_once` (no duplicate, no unknown item, no
//! acknowledged item lost; in any order), `fifo` when consumers take more
//! than one item each (each consumer takes the producer's items in offer
//! order; with one take each it could not fail, and is left out as a
//! scenario's unfalsifiable property is refused), no leaked nodes, no stuck
//! waiter, liveness; examples: an item is consumed, the workload can
//! complete. A failed offer is accounted for: a consumer whose take waits
//! is stuck only while an item it could take is in the queue directory or
//! a producer still has an offer to make (`properties::queue_no_stuck_waiter`,
//! `properties::queue_liveness`), so a queue that correctly reports an
//! offer failed (its session expired) is not blamed for the take nobody
//! can answer. [`model_of`] builds the same model for any queue recipe
//! and its calls (the registry's generic queue model, `Variant::queue`).
//! Known bug of the originals in reach: 6 (a lost delete reply loses an
//! item; two consumers racing for the head).

use crate::model::{ClientSpec, ModelRecipe, Oracles, RecipeModel};
use crate::properties;
use crate::setup::Setup;
use crate::workload::WorkStep;
use stateright::Property;
use zk_recipes::queue::{DistributedQueueOriginal, FixedQueue, QueueCall, TutorialQueueOriginal};
use zk_recipes::rename::RenameRecipe;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_sim::world::adapters::QueueCalls;

/// The queue directory.
pub const QUEUE_DIR: &str = "/q";

fn dir() -> Path {
    Path::new(QUEUE_DIR).expect("valid path")
}

/// The item client 0 offers as its `n`-th offer (from 1).
pub fn item(n: usize) -> Vec<u8> {
    format!("item-{n}").into_bytes()
}

/// Client 0 offers `takes` items per other client (at least one), every
/// other client takes `takes` items; `calls` says how.
fn workload<C: Clone>(
    clients: usize,
    takes: usize,
    calls: &QueueCalls<C>,
) -> impl Fn(usize) -> Vec<WorkStep<C>> + '_ {
    let items = (clients.saturating_sub(1) * takes).max(1);
    move |client| {
        if client == 0 {
            (1..=items)
                .map(|n| WorkStep::always((calls.offer)(item(n))))
                .collect()
        } else {
            vec![WorkStep::always(calls.take.clone()); takes]
        }
    }
}

/// The properties a queue model checks when each consumer takes `takes`
/// items: `fifo` only where it can fail (`takes` > 1).
pub fn queue_properties<R: ModelRecipe>(takes: usize) -> Vec<Property<RecipeModel<R>>> {
    let mut list = vec![properties::exactly_once()];
    if takes > 1 {
        list.push(properties::fifo());
    }
    list.extend([
        properties::no_leaks(),
        properties::queue_no_stuck_waiter(),
        properties::queue_liveness(),
        properties::item_consumed(),
        properties::workload_can_complete(),
    ]);
    list
}

fn build<R: ModelRecipe<Call = QueueCall> + RenameRecipe>(
    variant: &str,
    setup: &Setup,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    model(variant, setup, recipe).with_renaming()
}

/// The queue model of any queue recipe of `QueueCall`s on `/q`
/// (`recipe(c)` is client `c`'s machine), named `queue/{variant}`: see
/// [`model_of`]. Without renaming (`RecipeModel::with_renaming` adds it).
pub fn model<R: ModelRecipe<Call = QueueCall>>(
    variant: &str,
    setup: &Setup,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let site = QueueSite {
        name: format!("queue/{variant}"),
        dir: dir(),
        setup_requests: vec![Request::Create {
            path: dir(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        }],
    };
    let calls = QueueCalls::new(QueueCall::Offer, QueueCall::Take);
    model_of(&site, setup, &calls, recipe)
}

/// Where a queue model runs: its name for reports, the queue directory
/// (whose children are the items) and the requests that make the nodes
/// existing before the clients start.
#[derive(Clone, Debug)]
pub struct QueueSite {
    pub name: String,
    pub dir: Path,
    pub setup_requests: Vec<Request>,
}

/// The queue model of any queue recipe (`recipe(c)` is client `c`'s
/// machine, `calls` how to offer and take): client 0 offers, every other
/// client takes `setup.cycles` items (more than one lets `fifo` fail); the
/// queue properties, whose consumers may wait in vain for an item whose
/// offer failed. Without renaming.
pub fn model_of<R: ModelRecipe>(
    site: &QueueSite,
    setup: &Setup,
    calls: &QueueCalls<R::Call>,
    recipe: impl Fn(usize) -> R,
) -> RecipeModel<R> {
    let takes = setup.cycles.max(1);
    let oracles = Oracles {
        queue_dir: Some(site.dir.clone()),
        ..Oracles::default()
    };
    let clients = ClientSpec::many(setup.clients, recipe, workload(setup.clients, takes, calls));
    RecipeModel::new(
        site.name.clone(),
        &site.setup_requests,
        clients,
        setup.faults,
        oracles,
    )
    .with_setup(setup)
    .with_properties(queue_properties(takes))
}

/// Seed 000's `DistributedQueue`.
pub fn original(setup: &Setup) -> RecipeModel<DistributedQueueOriginal> {
    build("original", setup, |_| DistributedQueueOriginal::new(dir()))
}

/// Seed 001's tutorial `Queue`.
pub fn tutorial_original(setup: &Setup) -> RecipeModel<TutorialQueueOriginal> {
    build("tutorial_original", setup, |_| {
        TutorialQueueOriginal::new(dir())
    })
}

/// Receipts in one multi: exactly once.
pub fn fixed(setup: &Setup) -> RecipeModel<FixedQueue> {
    build("fixed", setup, |c| FixedQueue::new(dir(), c as u64 + 1))
}
