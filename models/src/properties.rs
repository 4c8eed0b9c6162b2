//! The named properties, written once for every recipe over the application
//! view (what clients believe, through `Observe`) and the server's tree.
//! Per-recipe modules pick the ones that apply.
//!
//! Safety (`always`): mutual exclusion among holders whose session is alive,
//! fenced mutual exclusion (tokens strictly increase across exclusive
//! holders), FIFO (a lock's acquisition order, a queue's per-consumer
//! delivery order), the herd bound, barrier safety, exactly-once queue
//! delivery (in any order), no leaked nodes, and the recipe's own
//! invariants (`recipe_invariant`: it never reported one broken).
//! Liveness: `eventually` the workload completes (stateright checks it on
//! terminal paths only) and, as an `always` property over the bounded model,
//! no stuck waiter: no state where a call waits for its outcome and nothing
//! but a fault could ever happen. A queue's versions account for failed
//! offers: a consumer is stuck only if an item it could take exists or will
//! still be offered ([`queue_no_stuck_waiter`], [`queue_liveness`]).
//! Non-vacuity (`sometimes`): a lock is acquired, an item consumed, the
//! workload completes, and a stale holder overlaps a live one (the process
//! pause of known bug 8, reachable whenever expiry is in the budget).

use crate::model::{ModelRecipe, RecipeModel};
use crate::state::{ClientId, ModelState, Violations};
use stateright::Property;
use zk_recipes::zk::Path;
use zk_recipes::Hold;
use zk_sim::oracles::{CallObservation, ObserveCall};
use zk_sim::server::ZkServer;

/// Property names, shared with reports and tests. They match the
/// simulator's oracles (`zk_sim::oracles::Property`) where both check the
/// same thing.
pub mod names {
    pub const MUTUAL_EXCLUSION: &str = "mutual_exclusion";
    pub const ONE_LEADER: &str = "one_leader";
    pub const FENCED_MUTUAL_EXCLUSION: &str = "fenced_mutual_exclusion";
    pub const FIFO: &str = "fifo";
    pub const HERD: &str = "herd";
    pub const BARRIER: &str = "barrier";
    pub const EXACTLY_ONCE: &str = "exactly_once";
    pub const NO_LEAKS: &str = "no_leaks";
    pub const NO_STUCK_WAITER: &str = "no_stuck_waiter";
    pub const LIVENESS: &str = "liveness";
    pub const LOCK_ACQUIRED: &str = "lock_acquired";
    pub const LEADER_ELECTED: &str = "leader_elected";
    pub const ITEM_CONSUMED: &str = "item_consumed";
    pub const BARRIER_PASSED: &str = "barrier_passed";
    pub const WORKLOAD_CAN_COMPLETE: &str = "workload_can_complete";
    pub const STALE_HOLDER_OVERLAP: &str = "stale_holder_overlap";
    pub const EXPIRY_REPORTED: &str = "expiry_reported";
    /// Every recipe's own invariants, as one property: a counterexample's
    /// replay on the simulator names the invariant the recipe reported.
    pub const RECIPE_INVARIANT: &str = "recipe_invariant";
}

/// Live holders are compatible: one exclusive holder alone, or shared
/// holders only, or at most `max_leases` leases.
pub fn mutual_exclusion<R: ModelRecipe>(name: &'static str) -> Property<RecipeModel<R>> {
    Property::always(name, |model: &RecipeModel<R>, state: &ModelState<R>| {
        holds_are_compatible(model, state)
    })
}

pub fn fenced_mutual_exclusion<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(
        names::FENCED_MUTUAL_EXCLUSION,
        |_: &RecipeModel<R>, state: &ModelState<R>| !state.violations.contains(Violations::FENCE),
    )
}

/// First come, first served, as the recipe's kind means it: a lock or an
/// election acquires in sequence order (`Violations::FIFO`); a queue's
/// consumer takes one producer's items in offer order
/// (`Violations::QUEUE_ORDER`). Each kind's model sets only its own.
pub fn fifo<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(names::FIFO, |_: &RecipeModel<R>, state: &ModelState<R>| {
        !state
            .violations
            .intersects(Violations::FIFO.union(Violations::QUEUE_ORDER))
    })
}

pub fn herd<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(names::HERD, |_: &RecipeModel<R>, state: &ModelState<R>| {
        !state.violations.contains(Violations::HERD)
    })
}

pub fn barrier<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(
        names::BARRIER,
        |_: &RecipeModel<R>, state: &ModelState<R>| {
            !state.violations.contains(Violations::BARRIER_ENTER)
                && !state.violations.contains(Violations::BARRIER_LEAVE)
        },
    )
}

/// No item delivered twice, none delivered that nobody offered; and
/// whenever nothing is in flight, every acknowledged item was delivered or
/// still waits in the queue. In any order: order is [`fifo`].
pub fn exactly_once<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(
        names::EXACTLY_ONCE,
        |model: &RecipeModel<R>, state: &ModelState<R>| {
            let bad = Violations::DUPLICATE_ITEM.union(Violations::UNKNOWN_ITEM);
            !state.violations.intersects(bad)
                && (!model.is_quiescent(state) || lost_items(model, state).is_empty())
        },
    )
}

/// Acknowledged items neither delivered nor in the queue directory.
pub fn lost_items<R: ModelRecipe>(model: &RecipeModel<R>, state: &ModelState<R>) -> Vec<Vec<u8>> {
    let queued: Vec<&[u8]> = match &model.oracles.queue_dir {
        Some(dir) => state
            .server
            .paths()
            .iter()
            .filter(|path| path.parent().as_ref() == Some(dir))
            .filter_map(|path| state.server.data(path))
            .collect(),
        None => Vec::new(),
    };
    state
        .items
        .iter()
        .filter(|(item, tally)| {
            tally.acknowledged > 0 && tally.taken == 0 && !queued.contains(&item.as_slice())
        })
        .map(|(item, _)| item.clone())
        .collect()
}

/// The recipe never reported one of its own invariants broken
/// (`Observation::Violated`). Every model built with
/// `RecipeModel::with_properties` checks it.
pub fn recipe_invariant<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(
        names::RECIPE_INVARIANT,
        |_: &RecipeModel<R>, state: &ModelState<R>| {
            !state.violations.contains(Violations::RECIPE_INVARIANT)
        },
    )
}

/// Once the workload is done and everything delivered, only the setup nodes
/// (and empty containers the reaper will take) are left.
pub fn no_leaks<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(
        names::NO_LEAKS,
        |model: &RecipeModel<R>, state: &ModelState<R>| {
            !(model.is_done(state) && model.is_quiescent(state))
                || leaked_nodes(model, state).is_empty()
        },
    )
}

pub fn no_stuck_waiter<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(
        names::NO_STUCK_WAITER,
        |model: &RecipeModel<R>, state: &ModelState<R>| {
            !(model.is_quiescent(state) && state.clients.iter().any(|c| c.pending.is_some()))
        },
    )
}

pub fn liveness<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::eventually(
        names::LIVENESS,
        |model: &RecipeModel<R>, state: &ModelState<R>| model.is_done(state),
    )
}

/// A queue's `no_stuck_waiter`: no quiescent state where a call waits,
/// except a consumer's take that waits in vain ([`waits_in_vain`]): no item
/// it could take is in the queue and nobody will offer one (an offer that
/// failed, correctly reported, leaves a take nobody can answer).
pub fn queue_no_stuck_waiter<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(
        names::NO_STUCK_WAITER,
        |model: &RecipeModel<R>, state: &ModelState<R>| {
            !model.is_quiescent(state)
                || (0..state.clients.len())
                    .all(|c| state.clients[c].pending.is_none() || waits_in_vain(model, state, c))
        },
    )
}

/// A queue's `liveness`: eventually every client has made every call and
/// has every outcome, or waits in vain for an item ([`queue_settled`]).
pub fn queue_liveness<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::eventually(names::LIVENESS, queue_settled)
}

/// Every client of a queue is done, or waits in vain ([`waits_in_vain`]).
pub fn queue_settled<R: ModelRecipe>(model: &RecipeModel<R>, state: &ModelState<R>) -> bool {
    (0..state.clients.len()).all(|c| {
        let client = &state.clients[c];
        let done =
            client.pending.is_none() && usize::from(client.next_step) >= model.workload(c).len();
        done || waits_in_vain(model, state, c)
    })
}

/// Client `c` has only takes left (its waiting call included), no item is
/// in the queue directory (any child of it counts) and no client has an
/// offer left to make: no item can come, and its take cannot be answered.
pub fn waits_in_vain<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    c: ClientId,
) -> bool {
    let offers_left = || {
        (0..state.clients.len()).any(|k| {
            calls_left(model, state, k).any(|call| matches!(call, CallObservation::Offer { .. }))
        })
    };
    calls_left(model, state, c).all(|call| call == CallObservation::Take)
        && !offers_left()
        && !queue_holds_an_item(model, state)
}

/// The calls client `c` has still to make or is waiting on, as observed.
fn calls_left<'a, R: ModelRecipe>(
    model: &'a RecipeModel<R>,
    state: &ModelState<R>,
    c: ClientId,
) -> impl Iterator<Item = CallObservation> + 'a {
    let client = &state.clients[c];
    let first = client
        .pending
        .map_or(client.next_step, |pending| pending.step);
    model.workload(c)[usize::from(first).min(model.workload(c).len())..]
        .iter()
        .map(|step| step.call.observe_call())
}

/// The queue directory has a child (an item a consumer could take).
fn queue_holds_an_item<R: ModelRecipe>(model: &RecipeModel<R>, state: &ModelState<R>) -> bool {
    let Some(dir) = &model.oracles.queue_dir else {
        return false;
    };
    state
        .server
        .stat(dir)
        .is_some_and(|stat| stat.num_children > 0)
}

pub fn workload_can_complete<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::sometimes(
        names::WORKLOAD_CAN_COMPLETE,
        |model: &RecipeModel<R>, state: &ModelState<R>| {
            model.is_done(state) && model.is_quiescent(state)
        },
    )
}

pub fn acquired<R: ModelRecipe>(name: &'static str) -> Property<RecipeModel<R>> {
    Property::sometimes(name, |_: &RecipeModel<R>, state: &ModelState<R>| {
        state.clients.iter().any(|c| c.holding.is_some())
    })
}

pub fn item_consumed<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::sometimes(
        names::ITEM_CONSUMED,
        |_: &RecipeModel<R>, state: &ModelState<R>| state.items.values().any(|t| t.taken > 0),
    )
}

pub fn barrier_passed<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::sometimes(
        names::BARRIER_PASSED,
        |model: &RecipeModel<R>, state: &ModelState<R>| {
            let Some(steps) = model.oracles.barrier else {
                return false;
            };
            state
                .clients
                .iter()
                .all(|c| c.next_step > steps.enter && c.pending.is_none())
        },
    )
}

/// A client that learned its session expired (it runs a newer session now)
/// no longer believes it holds what it got under the old one: the recipe
/// told it (`Lost`). Known bug 8's "never told".
pub fn expiry_reported<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::always(
        names::EXPIRY_REPORTED,
        |_: &RecipeModel<R>, state: &ModelState<R>| {
            state.clients.iter().all(|client| {
                client
                    .holding
                    .is_none_or(|holding| holding.session == client.session_id)
            })
        },
    )
}

/// The examples a budget with expiry adds to a hold model: the expiry is
/// reported to the application and (with a second client) a stale holder
/// overlaps a live one.
pub fn expiry_examples<R: ModelRecipe>(
    setup: &crate::setup::Setup,
) -> Vec<Property<RecipeModel<R>>> {
    let mut list = Vec::new();
    if setup.faults.expiry > 0 {
        list.push(expiry_reported());
    }
    if setup.faults.expiry > 0 && setup.clients > 1 {
        list.push(stale_holder_overlap());
    }
    list
}

/// A client still believes it holds under an expired session while another
/// holds under a live one: the pause of known bug 8, which only fencing
/// tokens make harmless.
pub fn stale_holder_overlap<R: ModelRecipe>() -> Property<RecipeModel<R>> {
    Property::sometimes(
        names::STALE_HOLDER_OVERLAP,
        |_: &RecipeModel<R>, state: &ModelState<R>| {
            let stale = (0..state.clients.len())
                .any(|c| state.clients[c].holding.is_some() && state.live_holding(c).is_none());
            stale && (0..state.clients.len()).any(|c| state.live_holding(c).is_some())
        },
    )
}

fn holds_are_compatible<R: ModelRecipe>(model: &RecipeModel<R>, state: &ModelState<R>) -> bool {
    let (mut exclusive, mut shared, mut leases) = (0u32, 0u32, 0u32);
    for c in 0..state.clients.len() {
        match state.live_holding(c).map(|h| h.hold) {
            Some(Hold::Exclusive) => exclusive += 1,
            Some(Hold::Shared) => shared += 1,
            Some(Hold::Leases(n)) => leases += n,
            None => {}
        }
    }
    let leases_ok = model.oracles.max_leases.is_none_or(|max| leases <= max);
    leases_ok && (exclusive == 0 || (exclusive == 1 && shared == 0 && leases == 0))
}

/// Nodes beyond the setup ones that the container reaper would not take.
pub fn leaked_nodes<R: ModelRecipe>(model: &RecipeModel<R>, state: &ModelState<R>) -> Vec<Path> {
    let extra = |server: &ZkServer| -> Vec<Path> {
        server
            .paths()
            .into_iter()
            .filter(|path| !model.setup_paths().contains(path))
            .collect()
    };
    if extra(&state.server).is_empty() {
        return Vec::new();
    }
    // Reap on a scratch copy until nothing more goes (a parent container
    // becomes empty once its child containers are reaped).
    let mut scratch = state.server.committed().clone();
    let mut remaining = extra(&scratch);
    loop {
        scratch.reap();
        let now = extra(&scratch);
        if now.len() == remaining.len() {
            return now;
        }
        remaining = now;
    }
}
