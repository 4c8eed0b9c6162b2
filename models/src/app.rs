//! The application view: turns each outcome a recipe emits into what its
//! client's application believes (what it holds, whether its call is
//! answered) and records the violations only visible on a step: a fencing
//! token that did not increase, an acquisition out of FIFO order, a queue
//! item delivered twice, a barrier passed early.

use crate::model::{ModelRecipe, RecipeModel};
use crate::narrate::Narration;
use crate::state::{ClientId, Holding, ModelState, Violations};
use crate::workload::Gate;
use zk_recipes::zk::{Path, SessionId};
use zk_recipes::{Hold, Observation, Observe};
use zk_sim::oracles::{CallObservation, ObserveCall};
use zk_sim::server::ZkServer;

/// Applies one outcome of `c`'s recipe to the application view.
pub(crate) fn observe<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    outcome: &R::Outcome,
    log: &mut Narration,
) {
    let observation = outcome.observe();
    log.note(|| format!("c{c}: outcome {outcome:?}"));
    let completes_call = match &observation {
        Observation::Acquired { hold, token } => {
            acquired(model, state, c, *hold, *token, log);
            true
        }
        Observation::Released => {
            state.clients[c].make_mut().holding = None;
            true
        }
        Observation::Lost => {
            let client = &mut *state.clients[c].make_mut();
            client.holding = None;
            client.pending.is_some_and(|p| p.while_holding)
        }
        Observation::Offered { .. } => {
            if let Some(item) = pending_offer(model, state, c) {
                let tally = state.items.entry(item).or_default();
                tally.acknowledged = tally.acknowledged.saturating_add(1);
            }
            true
        }
        Observation::Taken { item } => {
            taken(model, state, c, item, log);
            true
        }
        Observation::Entered => {
            barrier_passed(model, state, c, true, log);
            true
        }
        Observation::Left => {
            barrier_passed(model, state, c, false, log);
            true
        }
        Observation::TimedOut | Observation::Empty | Observation::Failed { .. } => true,
        // The recipe's own invariant: a violation, and no answer to a call.
        Observation::Violated { property, detail } => {
            assert!(
                <R::Outcome as Observe>::INVARIANTS.contains(&property.as_str()),
                "the recipe reported its invariant `{property}` broken, but its outcome type's \
                 `Observe::INVARIANTS` does not name it: list it there so that the model checker \
                 checks `recipe_invariant`"
            );
            log.note(|| format!("c{c}: reports `{property}` broken: {detail}"));
            state.violations.insert(Violations::RECIPE_INVARIANT);
            false
        }
    };
    if completes_call && state.clients[c].pending.is_some() {
        let failed = matches!(
            observation,
            Observation::Failed { .. } | Observation::TimedOut
        );
        let client = &mut *state.clients[c].make_mut();
        client.pending = None;
        client.last_call_failed = failed;
    }
}

fn acquired<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    hold: Hold,
    token: zk_recipes::FencingToken,
    log: &mut Narration,
) {
    let session = state.clients[c].session_id;
    if hold == Hold::Exclusive {
        check_fence(state, c, token, state.server.is_session_alive(session), log);
        if let Some(parent) = &model.oracles.fifo_parent {
            // The first node may be one of the client's own earlier
            // sessions it gave up on (client-side expiry): it is then the
            // oldest contender itself (mutual exclusion judges the rest).
            let generations = 0..=state.clients[c].generation;
            let sessions: Vec<SessionId> = generations.map(|g| model.session_id(c, g)).collect();
            if state.server.is_session_alive(session)
                && !owns_first_child(&state.server, parent, &sessions)
            {
                log.note(|| {
                    format!("  !! c{c} acquired while an older contender's node is under {parent}")
                });
                state.violations.insert(Violations::FIFO);
            }
        }
    }
    state.clients[c].make_mut().holding = Some(Holding {
        hold,
        token,
        session,
    });
}

/// Fencing: a resource accepts a token at least as high as any it saw. It
/// keeps two holders apart iff an acquisition under a live session carries a
/// token above every token granted before, and an acquisition under an
/// already expired session (a stale holder, acting on an old read) never
/// carries a token above a live holder's.
fn check_fence<R: ModelRecipe>(
    state: &mut ModelState<R>,
    c: ClientId,
    token: zk_recipes::FencingToken,
    live: bool,
    log: &mut Narration,
) {
    let above_fence = state.fence.is_none_or(|fence| token > fence);
    let live_holder = (0..state.clients.len()).any(|k| {
        k != c
            && state
                .live_holding(k)
                .is_some_and(|h| h.hold == Hold::Exclusive)
    });
    if live && !above_fence {
        log.note(|| {
            format!(
                "  !! token {} is not above the highest granted token",
                token.0
            )
        });
        state.violations.insert(Violations::FENCE);
    } else if !live && above_fence && live_holder {
        log.note(|| format!("  !! stale token {} is above the live holder's", token.0));
        state.violations.insert(Violations::FENCE);
    }
    state.fence = state.fence.max(Some(token));
}

/// The item of the offer call `c` is waiting on.
fn pending_offer<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    c: ClientId,
) -> Option<Vec<u8>> {
    let step = state.clients[c].pending?.step;
    match model.workload(c)[usize::from(step)].call.observe_call() {
        CallObservation::Offer { item } => Some(item),
        _ => None,
    }
}

/// A consumer got `item`: it must have been offered and not delivered
/// before, and this consumer must not already hold a later item of the same
/// producer.
fn taken<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    item: &[u8],
    log: &mut Narration,
) {
    let Some((producer, index)) = model.offer_of(item) else {
        log.note(|| {
            format!(
                "  !! item {:?} was never offered",
                String::from_utf8_lossy(item)
            )
        });
        state.violations.insert(Violations::UNKNOWN_ITEM);
        return;
    };
    let overtaken = state.items.iter().any(|(other, tally)| {
        tally.takers & (1 << c) != 0
            && model
                .offer_of(other)
                .is_some_and(|(p, i)| p == producer && i > index)
    });
    if overtaken {
        log.note(|| {
            format!(
                "  !! c{c} took {:?} after a later item of the same producer",
                String::from_utf8_lossy(item)
            )
        });
        state.violations.insert(Violations::QUEUE_ORDER);
    }
    let tally = state.items.entry(item.to_vec()).or_default();
    tally.taken = tally.taken.saturating_add(1);
    tally.takers |= 1 << c;
    if tally.taken > 1 {
        log.note(|| {
            format!(
                "  !! item {:?} delivered twice",
                String::from_utf8_lossy(item)
            )
        });
        state.violations.insert(Violations::DUPLICATE_ITEM);
    }
}

/// Checks that nobody passed a barrier step before every member called it.
fn barrier_passed<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    entering: bool,
    log: &mut Narration,
) {
    let Some(steps) = model.oracles.barrier else {
        return;
    };
    let (step, violation) = if entering {
        (Some(steps.enter), Violations::BARRIER_ENTER)
    } else {
        (steps.leave, Violations::BARRIER_LEAVE)
    };
    let Some(step) = step else { return };
    // A member whose session expired is out of the round: the server
    // removed its node, so the others may rightly pass without it.
    let laggard = (0..state.clients.len()).find(|&k| {
        let client = &state.clients[k];
        client.next_step <= step && client.generation == 0 && state.is_alive(k)
    });
    if let Some(k) = laggard {
        log.note(|| format!("  !! c{c} passed the barrier before c{k} called it"));
        state.violations.insert(violation);
    }
}

/// The lowest-sequence child of `parent` is an ephemeral of one of
/// `sessions` (a client's current session and those it had before), or
/// none of the children is theirs: a client without a node of its own has
/// no place in the queue to compare (as the simulator's FIFO oracle; mutual
/// exclusion judges such an acquisition).
pub(crate) fn owns_first_child(server: &ZkServer, parent: &Path, sessions: &[SessionId]) -> bool {
    let children: Vec<(u32, Path)> = server
        .paths()
        .into_iter()
        .filter(|path| path.parent().as_ref() == Some(parent))
        .filter_map(|path| sequence_suffix(path.name()).map(|seq| (seq, path)))
        .collect();
    let owned = |path: &Path| {
        sessions
            .iter()
            .any(|&session| server.ephemerals_of(session).contains(path))
    };
    if !children.iter().any(|(_, path)| owned(path)) {
        return true;
    }
    children.iter().min().is_none_or(|(_, path)| owned(path))
}

/// The 10-digit sequence suffix ZooKeeper appends to a sequential node.
pub fn sequence_suffix(name: &str) -> Option<u32> {
    let digits = name.get(name.len().checked_sub(10)?..)?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())
        .flatten()
}

/// Skips the client's next steps whose gate fails now (e.g. unlock when the
/// lock call failed or the hold was lost).
pub(crate) fn skip_gated_steps<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
) {
    let workload = model.workload(c);
    let client = &state.clients[c];
    if client.pending.is_some() {
        return;
    }
    let skipped = |step: usize| match workload[step].gate {
        Gate::Always => false,
        Gate::Release => client.holding.is_none(),
        Gate::AfterSuccess => client.last_call_failed,
    };
    let mut next = usize::from(client.next_step);
    while next < workload.len() && skipped(next) {
        next += 1;
    }
    if next != usize::from(client.next_step) {
        state.clients[c].make_mut().next_step = next as u8;
    }
}
