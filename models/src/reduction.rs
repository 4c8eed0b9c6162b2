//! Partial-order reduction: in a state where some client can handle the head
//! of its inbox without anyone being able to tell, explore only that step.
//!
//! Most of a model's states are orders of steps that do not affect one
//! another: client A handling a reply (its recipe sends the next request)
//! while client B's request is applied at the server, in either order, ends
//! in the same state. This module picks, where it is safe, a single such
//! step as the state's only successor (a persistent set of size one, in the
//! terms of Godefroid's and Peled's ample sets):
//!
//! - **The step.** `Deliver(c)`: client `c` handles the head of its inbox.
//! - **Independence (C1).** It commutes with every step any client can take
//!   before it, as long as no fault can happen any more (the whole budget is
//!   spent), `c` is connected with a live session, has no pending timer and
//!   no application call to make. Then `c`'s only other possible step is
//!   `Send(c)` (moves its outgoing head to the server; the delivery only
//!   appends to the outgoing queue and pops the head of the in-flight one),
//!   and other clients' steps reach `c` only by appending watch events to
//!   the tail of its inbox, behind the head being handled. The server's
//!   `Reap` is independent too: it depends on the server alone, which the
//!   delivery leaves as it is (C2), and reaches `c` only through its inbox
//!   tail. So does a follower's `Apply` (`--servers 2`): it changes the
//!   servers and appends replies and events to inbox tails.
//! - **Invisibility (C2).** The step must leave every fact a property reads
//!   unchanged: the server, the fault budget, the fencing token, the queue
//!   tallies, the violations seen, and `c`'s application view (pending call,
//!   what it holds, workload position, session generation). A delivery that
//!   answers a call or grants a hold is not reduced. The properties that read
//!   quiescence are safe because a skipped state has the step enabled (so is
//!   not quiescent), and with no budget left a quiescent state is a terminal
//!   one, which persistent sets never lose.
//! - **Cycles (C3).** Every reduced step shortens an inbox and nothing but a
//!   fully expanded step fills one, so no cycle consists of reduced steps.
//!
//! `tests/reduction.rs` checks that every registered model reaches the same
//! verdict with and without the reduction, and pins what it saves.
//!
//! Testing invisibility computes the step's successor; the checker asks for
//! it right after (`next_state`), so every successor computed while looking
//! for the step is kept for those calls on the same thread
//! ([`take_successor`]) instead of being computed twice: the chosen one,
//! or, when no step is safe alone, the deliveries tested on the way, which
//! the full expansion of the state asks for next.

use crate::action::Action;
use crate::faults::FaultBudget;
use crate::model::{ModelRecipe, RecipeModel};
use crate::narrate::Narration;
use crate::state::{ClientId, ModelState};
use crate::transition;
use std::any::Any;
use std::cell::RefCell;
use zk_sim::client::ConnectionState;

thread_local! {
    /// The successors computed by the last look for a step on this
    /// thread: a [`Computed`].
    static COMPUTED: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// Successors of one state computed while looking for a reduced step.
struct Computed<R: ModelRecipe> {
    from: ModelState<R>,
    successors: Vec<(Action, ModelState<R>)>,
}

/// The successor of `action` from `state`, if the reduction just computed it
/// on this thread.
pub fn take_successor<R: ModelRecipe>(
    state: &ModelState<R>,
    action: Action,
) -> Option<ModelState<R>> {
    COMPUTED.with(|cell| {
        let mut cell = cell.borrow_mut();
        let computed = cell.as_mut()?.downcast_mut::<Computed<R>>()?;
        if computed.from != *state {
            *cell = None;
            return None;
        }
        let at = computed.successors.iter().position(|(a, _)| *a == action)?;
        Some(computed.successors.swap_remove(at).1)
    })
}

/// The single step to explore from `state`, if one is safe to pick alone.
pub fn invisible_step<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
) -> Option<Action> {
    // A session a client gave up on may still expire: its deletions are
    // visible, so no delivery is picked alone until it has.
    if state.budget != FaultBudget::NONE || model.has_abandoned(state) {
        return None;
    }
    let mut computed = Computed {
        from: state.clone(),
        successors: Vec::new(),
    };
    let mut chosen = None;
    for c in (0..state.clients.len()).filter(|&c| delivery_is_independent(model, state, c)) {
        let (to, invisible) = delivered(model, state, c);
        if invisible {
            computed.successors = vec![(Action::Deliver(c), to)];
            chosen = Some(Action::Deliver(c));
            break;
        }
        computed.successors.push((Action::Deliver(c), to));
    }
    if !computed.successors.is_empty() {
        COMPUTED.with(|cell| *cell.borrow_mut() = Some(Box::new(computed)));
    }
    chosen
}

/// `Deliver(c)` commutes with everything that can happen before it.
fn delivery_is_independent<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    c: ClientId,
) -> bool {
    let client = &state.clients[c];
    let call_enabled =
        client.pending.is_none() && usize::from(client.next_step) < model.workload(c).len();
    !client.inbox.is_empty()
        && !call_enabled
        && client.session.timers.is_empty()
        && client.session.state == ConnectionState::Connected
        && state.is_alive(c)
}

/// The successor of `Deliver(c)`, and whether the step changes nothing any
/// property reads.
fn delivered<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    c: ClientId,
) -> (ModelState<R>, bool) {
    let mut next = state.clone();
    transition::apply(model, &mut next, Action::Deliver(c), &mut Narration::off());
    let (before, after) = (&state.clients[c], &next.clients[c]);
    let invisible = next.server == state.server
        && next.budget == state.budget
        && next.fence == state.fence
        && next.items == state.items
        && next.violations == state.violations
        && after.pending == before.pending
        && after.holding == before.holding
        && after.next_step == before.next_step
        && after.generation == before.generation
        && after.last_call_failed == before.last_call_failed;
    (next, invisible)
}
