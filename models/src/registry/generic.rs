//! The generic models of queue and barrier recipes registered with
//! [`super::Variant::queue`] and [`super::Variant::barrier`]: built from the
//! same constructor and calls the simulator runs, with the properties of
//! the kind (`crate::queue::model_of`, `crate::barrier::model_of`). A
//! user's queue or barrier is model-checked without writing a model.
//!
//! Setup: the recipe's directory (and its ancestors) exists when the
//! variant needs it. Clients get unique ids `1..=N`.
//! - Queue: client 0 offers one item per take of the others, every other
//!   client takes `setup.cycles` items; a take that waits for an item whose
//!   offer failed (and that nobody will offer again) is not a stuck waiter.
//! - Barrier: every client is a member (size N); each enters, then leaves
//!   if it entered. The model interleaves the members' steps in every
//!   order, so staggered arrivals (the simulator draws them from the seed)
//!   are among the explored orders.

use super::{hold, Make, ModelSite};
use crate::barrier::{self, BarrierSite};
use crate::model::{ModelRecipe, RecipeModel};
use crate::queue::{self, QueueSite};
use crate::setup::Setup;
use zk_sim::scenario::ClientContext;
use zk_sim::world::adapters::{BarrierCalls, QueueCalls};

/// The model of one queue variant for `setup`.
pub(super) fn queue_model<R: ModelRecipe>(
    site: &ModelSite,
    setup: &Setup,
    calls: &QueueCalls<R::Call>,
    make: &Make<R>,
) -> RecipeModel<R> {
    let queue_site = QueueSite {
        name: format!("{}/{}", site.recipe, site.variant),
        dir: site.path.clone(),
        setup_requests: hold::setup_requests(site),
    };
    queue::model_of(&queue_site, setup, calls, |c| {
        make(&ClientContext::for_model(
            site.path.clone(),
            c,
            setup.clients,
        ))
    })
}

/// The model of one barrier variant for `setup`.
pub(super) fn barrier_model<R: ModelRecipe>(
    site: &ModelSite,
    setup: &Setup,
    calls: &BarrierCalls<R::Call>,
    make: &Make<R>,
) -> RecipeModel<R> {
    let barrier_site = BarrierSite {
        name: format!("{}/{}", site.recipe, site.variant),
        setup_requests: hold::setup_requests(site),
    };
    barrier::model_of(&barrier_site, setup, calls, |c| {
        make(&ClientContext::for_model(
            site.path.clone(),
            c,
            setup.clients,
        ))
    })
}
