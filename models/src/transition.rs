//! Applies one [`Action`] to a [`ModelState`]: moves requests to the server,
//! replies and events to clients, injects faults, and afterwards hands the
//! outcomes the recipe emitted to the application view ([`crate::app`]).
//!
//! The network follows `zk_sim::stepper`: a request reaching the server is
//! applied at once and its reply queued in the client's inbox behind the
//! events already there; events a change triggers (a reaped container's
//! too) are queued for every connected client they concern; a dropped
//! connection loses the inbox.

use crate::action::Action;
use crate::app;
use crate::model::{self, ModelRecipe, RecipeModel, MODEL_SESSION_TIMEOUT_MS};
use crate::narrate::{self, Narration};
use crate::server::ModelServer;
use crate::state::{ClientId, Inbound, ModelState, Violations};
use std::collections::BTreeMap;
use zk_recipes::zk::SessionId;
use zk_recipes::zk::{EventType, MultiOp, Request};
use zk_sim::client::ConnectionState;
use zk_sim::ensemble::{DeletionOrder, EnsembleEvent};
use zk_sim::oracles::{CallObservation, ObserveCall};
use zk_sim::server::{Notification, PermutedOrder, SortedOrder};

/// Applies `action`; the caller enumerated it from `state`.
pub(crate) fn apply<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    action: Action,
    log: &mut Narration,
) {
    if let Some(kind) = action.fault() {
        state.budget.spend(kind);
    }
    let Some(c) = action.client() else {
        // The server's reaper or a follower: no client acts, so no outcome
        // to settle here (a follower's answers wait in inboxes).
        return match action {
            Action::Apply { server } => apply_log(model, state, usize::from(server), log),
            Action::LeaderLoss => leader_loss(model, state, log),
            _ => reap(model, state, log),
        };
    };
    match action {
        Action::Call(_) => call(model, state, c, log),
        Action::Send { order, .. } => send(model, state, c, order, log),
        Action::Deliver(_) => deliver(state, c, 0, log),
        Action::Reorder { index, .. } => deliver(state, c, usize::from(index), log),
        Action::FireTimer(_) => fire_timer(state, c, log),
        Action::Reconnect { server, .. } => reconnect(model, state, c, usize::from(server), log),
        Action::ReconnectFails(_) => reconnect_fails(state, c, log),
        Action::LearnExpiry { server, .. } => {
            learn_expiry(model, state, c, usize::from(server), log)
        }
        Action::Disconnect(_) => disconnect(model, state, c, log),
        Action::LoseRequest { applied, .. } => lose_request(model, state, c, applied, log),
        Action::Expire { order, .. } => expire(model, state, c, order, log),
        Action::Spurious { watch, .. } => spurious(state, c, usize::from(watch), log),
        Action::ClientExpiry { server, .. } => {
            client_expiry(model, state, c, usize::from(server), log)
        }
        Action::ExpireAbandoned {
            generation, order, ..
        } => expire_abandoned(model, state, c, generation, order, log),
        Action::Reap | Action::Apply { .. } | Action::LeaderLoss => {
            unreachable!("no client's action")
        }
    }
    settle(model, state, c, log);
}

/// Hands the outcomes the client's recipe emitted to the application view,
/// then skips workload steps whose gate no longer holds.
pub(crate) fn settle<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    log: &mut Narration,
) {
    if !state.clients[c].session.outcomes.is_empty() {
        let outcomes = std::mem::take(&mut state.clients[c].make_mut().session.outcomes);
        for outcome in &outcomes {
            app::observe(model, state, c, outcome, log);
        }
    }
    app::skip_gated_steps(model, state, c);
}

fn call<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    log: &mut Narration,
) {
    let mut client = state.clients[c].make_mut();
    let step = client.next_step;
    let work = &model.workload(c)[usize::from(step)];
    log.note(|| format!("c{c}: application calls {:?}", work.call));
    client.pending = Some(crate::state::Pending {
        step,
        while_holding: client.holding.is_some(),
    });
    client.next_step += 1;
    // The application stops using what it holds when it calls release.
    if work.call.observe_call() == CallObservation::Release {
        client.holding = None;
    }
    client.session.call(work.call.clone());
}

fn send<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    order: u16,
    log: &mut Narration,
) {
    let sid = state.clients[c].session_id;
    let mut client = state.clients[c].make_mut();
    let (tag, request) = client
        .session
        .next_to_send()
        .expect("send needs a request and a connection");
    let mut server = state.server.make_mut();
    let Some(one) = server.one_mut() else {
        let ensemble = server.ensemble_mut().expect("an ensemble");
        let at = ensemble.server_of(sid).unwrap_or(0);
        let events = ensemble.submit(sid, request.clone(), &mut PermutedOrder(order));
        drop(server);
        drop(client);
        log.note(|| {
            format!(
                "c{c}: {} [{tag:?}] reaches server {at}",
                narrate::request(&request)
            )
        });
        return dispatch(model, state, events, deletes(&request), log);
    };
    let applied = if order == 0 {
        one.apply(sid, &request, &mut SortedOrder)
    } else {
        one.apply(sid, &request, &mut PermutedOrder(order))
    };
    drop(server);
    log.note(|| {
        format!(
            "c{c}: server applies {} [{tag:?}] -> {}",
            narrate::request(&request),
            narrate::result(&applied.result)
        )
    });
    client.inbox.push_back(Inbound::Reply {
        result: applied.result,
        zxid: applied.zxid,
    });
    drop(client);
    route(model, state, applied.notifications, deletes(&request), log);
}

fn deliver<R: ModelRecipe>(
    state: &mut ModelState<R>,
    c: ClientId,
    index: usize,
    log: &mut Narration,
) {
    let client = &mut *state.clients[c].make_mut();
    let inbound = client
        .inbox
        .remove(index)
        .expect("deliver needs an inbox entry");
    match inbound {
        Inbound::Reply { result, zxid } => {
            log.note(|| {
                let request = client
                    .session
                    .in_flight
                    .front()
                    .map(|(_, r, _)| narrate::request(r))
                    .unwrap_or_default();
                format!(
                    "c{c}: receives reply to {request}: {}",
                    narrate::result(&result)
                )
            });
            client.session.reply(result, zxid);
        }
        Inbound::Event(event) => {
            log.note(|| {
                let early = if index > 0 {
                    " (ahead of earlier replies)"
                } else {
                    ""
                };
                format!(
                    "c{c}: receives watch event {}{early}",
                    narrate::event(&event)
                )
            });
            client.session.notification(event);
        }
    }
}

fn fire_timer<R: ModelRecipe>(state: &mut ModelState<R>, c: ClientId, log: &mut Narration) {
    let client = &mut *state.clients[c].make_mut();
    let (_, id) = client
        .session
        .next_timer()
        .expect("fire_timer needs a pending timer");
    log.note(|| format!("c{c}: timer {id:?} fires"));
    client.session.fire_timer(id);
}

/// The client reconnects into its live session at `server` (or learns it
/// expired). On an ensemble the session's requests wait there for the
/// leader's revalidation unless the model turned it off
/// (`RecipeModel::revalidate`); its watches are re-registered at once, as
/// the world does (`zk_sim::world`, `reconnect_at`: the server is never
/// behind the client's last zxid, so nothing fires that the client saw).
fn reconnect<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    server: usize,
    log: &mut Narration,
) {
    if !state.is_alive(c) {
        learn_expiry(model, state, c, server, log);
        return;
    }
    let sid = state.clients[c].session_id;
    let (watches, zxid) = state.clients[c].make_mut().session.reconnected();
    log.note(|| {
        let to = match model.servers {
            1 => String::new(),
            _ => format!(" at server {server}"),
        };
        format!(
            "c{c}: reconnects into session {}{to}, re-registers {} watch(es)",
            sid.0,
            watches.data.len() + watches.exist.len() + watches.child.len()
        )
    });
    let notifications = match &mut *state.server.make_mut() {
        ModelServer::One(one) => one.set_watches(sid, zxid, &watches),
        ModelServer::Ensemble(ensemble) => {
            let connected = match model.revalidate {
                true => ensemble.connect_revalidated(server, sid, zxid),
                false => ensemble.connect(server, sid, zxid),
            };
            connected.expect("reconnect goes to a server not behind the client");
            ensemble.set_watches(sid, zxid, &watches)
        }
    };
    settle(model, state, c, log);
    route(model, state, notifications, false, log);
}

/// A reconnect attempt fails: what the client queued since the disconnect
/// fails with ConnectionLoss (never sent, so not applied).
fn reconnect_fails<R: ModelRecipe>(state: &mut ModelState<R>, c: ClientId, log: &mut Narration) {
    let client = &mut *state.clients[c].make_mut();
    log.note(|| {
        let queued: Vec<String> = client
            .session
            .outgoing
            .iter()
            .map(|(_, r, _)| narrate::request(r))
            .collect();
        format!(
            "c{c}: reconnect attempt fails; queued {} fail(s) with ConnectionLoss",
            queued.join(", ")
        )
    });
    client.session.reconnect_failed();
}

/// The client learns its session expired and opens a new one.
fn learn_expiry<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    server: usize,
    log: &mut Narration,
) {
    let old = state.clients[c].session_id;
    let new = model.session_id(c, state.clients[c].generation + 1);
    {
        let client = &mut *state.clients[c].make_mut();
        client.inbox.clear();
        client.session.expired();
        client.generation += 1;
        client.session_id = new;
    }
    settle(model, state, c, log);
    log.note(|| {
        let at = match model.servers {
            1 => String::new(),
            _ => format!(" at server {server}"),
        };
        format!(
            "c{c}: learns session {} expired; opens session {}{at}",
            old.0, new.0
        )
    });
    let events = match &mut *state.server.make_mut() {
        ModelServer::One(one) => {
            one.open_session(new, MODEL_SESSION_TIMEOUT_MS)
                .expect("fresh session id");
            Vec::new()
        }
        // The client sends at once; the server answers after the opening
        // (a follower, once it applied it).
        ModelServer::Ensemble(ensemble) => ensemble
            .open_session(server, new, MODEL_SESSION_TIMEOUT_MS, &mut PermutedOrder(0))
            .expect("fresh session id"),
    };
    state.clients[c].make_mut().session.connected(new);
    dispatch(model, state, events, false, log);
}

fn disconnect<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    log: &mut Narration,
) {
    let sid = state.clients[c].session_id;
    log.note(|| format!("c{c}: FAULT connection drops (queued replies and events lost)"));
    match &mut *state.server.make_mut() {
        ModelServer::One(one) => one.disconnect(sid),
        ModelServer::Ensemble(ensemble) => ensemble.disconnect(sid),
    }
    let client = &mut *state.clients[c].make_mut();
    client.inbox.clear();
    client.session.disconnected();
    let _ = model;
}

fn lose_request<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    applied: bool,
    log: &mut Narration,
) {
    if applied {
        log.note(|| format!("c{c}: FAULT the next request reaches the server, its reply is lost"));
        send(model, state, c, 0, log);
    } else {
        let (_, request) = state.clients[c]
            .make_mut()
            .session
            .next_to_send()
            .expect("a request to lose");
        log.note(|| {
            format!(
                "c{c}: FAULT {} is lost before the server sees it",
                narrate::request(&request)
            )
        });
    }
    disconnect(model, state, c, log);
}

fn expire<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    order: u16,
    log: &mut Narration,
) {
    let sid = state.clients[c].session_id;
    log.note(|| {
        format!(
            "c{c}: FAULT server expires session {} (the client does not know yet){}",
            sid.0,
            arranged(order)
        )
    });
    end_session(model, state, sid, order, log);
}

/// ", its ephemerals deleted in order #n" for a permuted deletion order.
fn arranged(order: u16) -> String {
    match order {
        0 => String::new(),
        n => format!(", its ephemerals deleted in order #{n}"),
    }
}

/// A disconnected client gives up on its session (client-side expiry, as
/// Curator 3.0+ does after the session timeout spent disconnected): it sees
/// Expired and opens a new session, while the server keeps the old one and
/// its ephemerals until its own timer runs out ([`expire_abandoned`]).
fn client_expiry<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    server: usize,
    log: &mut Narration,
) {
    let old = state.clients[c].session_id;
    log.note(|| {
        format!(
            "c{c}: FAULT gives up on session {} after the session timeout disconnected \
             (client-side expiry); the server keeps it and its ephemerals until it expires it",
            old.0
        )
    });
    learn_expiry(model, state, c, server, log);
}

/// The server's timer expires a session its client gave up on: its
/// ephemerals go and their watches fire (for the clients connected now).
fn expire_abandoned<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    c: ClientId,
    generation: u8,
    order: u16,
    log: &mut Narration,
) {
    let sid = model.session_id(c, generation);
    log.note(|| {
        format!(
            "server: expires session {}, which c{c} gave up on{}",
            sid.0,
            arranged(order)
        )
    });
    end_session(model, state, sid, order, log);
}

/// Every connected client is disconnected at once: the followers close
/// every connection when the leader is lost (with one server, a restart).
fn leader_loss<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    log: &mut Narration,
) {
    log.note(|| "FAULT the leader is lost: every client connection is closed".to_string());
    for c in 0..state.clients.len() {
        if state.clients[c].session.state == ConnectionState::Connected {
            disconnect(model, state, c, log);
            settle(model, state, c, log);
        }
    }
}

/// The server ends session `sid`, its ephemerals deleted in the
/// `order`-th permutation of path order; their watchers are notified.
fn end_session<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    sid: SessionId,
    order: u16,
    log: &mut Narration,
) {
    let mut server = state.server.make_mut();
    let notifications = match &mut *server {
        ModelServer::One(one) if order == 0 => one.close_session(sid, &mut SortedOrder),
        ModelServer::One(one) => one.close_session(sid, &mut PermutedOrder(order)),
        ModelServer::Ensemble(ensemble) => {
            let events = ensemble
                .close_session(sid, DeletionOrder::Permuted(order), &mut PermutedOrder(0))
                .expect("expire needs a live session");
            drop(server);
            return dispatch(model, state, events, true, log);
        }
    }
    .expect("expire needs a live session");
    drop(server);
    route(model, state, notifications, true, log);
}

/// A follower applies its next committed transaction: the watches it
/// fires and the answers that became ready there go to their clients.
/// Deletions it applies count as a release for the herd bound (at this
/// server: each server's watchers are counted as that server applies).
fn apply_log<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    server: usize,
    log: &mut Narration,
) {
    log.note(|| {
        format!(
            "server {server}: applies the next committed transaction (lag {} -> {})",
            state.server.lag(server),
            state.server.lag(server) - 1
        )
    });
    let events = state
        .server
        .make_mut()
        .ensemble_mut()
        .expect("apply needs an ensemble")
        .apply_next(server, &mut PermutedOrder(0));
    let release = events.iter().any(|event| {
        matches!(event, EnsembleEvent::Notify(n) if n.event.event_type == EventType::NodeDeleted)
    });
    dispatch(model, state, events, release, log);
    // Answers that became ready may complete calls: hand their outcomes on
    // when the clients handle them (Deliver), as with any reply.
}

fn spurious<R: ModelRecipe>(
    state: &mut ModelState<R>,
    c: ClientId,
    watch: usize,
    log: &mut Narration,
) {
    let client = &mut *state.clients[c].make_mut();
    let event = client
        .session
        .watches
        .nth_armed_event(watch)
        .expect("spurious needs an armed watch");
    log.note(|| {
        format!(
            "c{c}: FAULT spurious watch event {}",
            narrate::event(&event)
        )
    });
    // An injected fault, not a wakeup the recipe caused: the herd bound
    // does not count it (nor does the simulator's oracle).
    client.session.notification(event);
}

/// The server's reaper deletes every container that had a child and has
/// none left; their watchers are notified. Not a release: the herd bound
/// counts what a recipe's own deletes and expiries wake.
fn reap<R: ModelRecipe>(model: &RecipeModel<R>, state: &mut ModelState<R>, log: &mut Narration) {
    log.note(|| {
        let doomed: Vec<String> = model::reapable_containers(&state.server)
            .iter()
            .map(|path| path.to_string())
            .collect();
        format!(
            "server: reaper deletes empty container(s) {}",
            doomed.join(", ")
        )
    });
    let before = state.server.paths().len();
    let mut server = state.server.make_mut();
    let notifications = match &mut *server {
        ModelServer::One(one) => one.reap(),
        ModelServer::Ensemble(ensemble) => {
            let events = ensemble.reap(&mut PermutedOrder(0));
            drop(server);
            assert!(
                state.server.paths().len() < before,
                "reap needs a reapable container"
            );
            return dispatch(model, state, events, false, log);
        }
    };
    drop(server);
    assert!(
        state.server.paths().len() < before,
        "reap needs a reapable container"
    );
    route(model, state, notifications, false, log);
}

/// Queues notifications for the connected clients they concern. With
/// `release` (the change deleted nodes: a delete, or an expired session's
/// ephemerals), flags a change that notified more clients than the herd
/// bound: a release should wake its successor, not every contender.
fn route<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    notifications: Vec<Notification>,
    release: bool,
    log: &mut Narration,
) {
    let mut per_change = PerChange::new();
    for notification in &notifications {
        queue_event(state, notification, &mut per_change, log);
    }
    check_herd(model, state, &per_change, release, log);
}

/// Clients notified per change (event type, path).
type PerChange<'a> = BTreeMap<(EventType, Option<&'a str>), usize>;

/// Queues a watch event for the client whose connected session it is for.
fn queue_event<'a, R: ModelRecipe>(
    state: &mut ModelState<R>,
    notification: &'a Notification,
    per_change: &mut PerChange<'a>,
    log: &mut Narration,
) {
    let Some(k) = connected_client(state, notification.session) else {
        return;
    };
    log.note(|| {
        format!(
            "  -> watch event {} queued for c{k}",
            narrate::event(&notification.event)
        )
    });
    let event = &notification.event;
    // An expired session's own notifications wake no live contender.
    let live = state.server.is_session_alive(notification.session);
    *per_change
        .entry((event.event_type, event.path.as_ref().map(|p| p.as_str())))
        .or_default() += usize::from(live);
    state.clients[k]
        .make_mut()
        .inbox
        .push_back(Inbound::Event(notification.event.clone()));
}

/// The client whose current session is `session`, if it is connected.
fn connected_client<R: ModelRecipe>(state: &ModelState<R>, session: SessionId) -> Option<ClientId> {
    (0..state.clients.len()).find(|&k| {
        state.clients[k].session_id == session
            && state.clients[k].session.state == ConnectionState::Connected
    })
}

/// With `release`, flags a change that notified more clients than the
/// herd bound.
fn check_herd<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    per_change: &PerChange<'_>,
    release: bool,
    log: &mut Narration,
) {
    let Some(bound) = model.oracles.herd_bound.filter(|_| release) else {
        return;
    };
    if per_change.values().any(|&notified| notified > bound) {
        log.note(|| format!("  !! one release notified more than {bound} client(s) of one change"));
        state.violations.insert(Violations::HERD);
    }
}

/// Hands what the ensemble did to the clients, in order: watch events and
/// replies join the inboxes of connected clients (a reply to a request the
/// client sent, answered at its server); openings and closes need no
/// message (the client sent at once; it learns a close with `LearnExpiry`).
fn dispatch<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &mut ModelState<R>,
    events: Vec<EnsembleEvent>,
    release: bool,
    log: &mut Narration,
) {
    let mut per_change = PerChange::new();
    for event in &events {
        match event {
            EnsembleEvent::Notify(notification) => {
                queue_event(state, notification, &mut per_change, log)
            }
            EnsembleEvent::Reply { session, applied } => {
                let Some(k) = connected_client(state, *session) else {
                    continue;
                };
                log.note(|| {
                    format!(
                        "  -> reply {} queued for c{k}",
                        narrate::result(&applied.result)
                    )
                });
                state.clients[k].make_mut().inbox.push_back(Inbound::Reply {
                    result: applied.result.clone(),
                    zxid: applied.zxid,
                });
            }
            // The reply to the write comes with `Reply`.
            EnsembleEvent::Opened { .. } | EnsembleEvent::Committed { .. } => {}
            EnsembleEvent::Closed { session } => {
                if let Some(k) = connected_client(state, *session) {
                    log.note(|| format!("  -> c{k}'s server closes its expired session"));
                }
            }
        }
    }
    check_herd(model, state, &per_change, release, log);
}

/// The request deletes nodes (a release, for the herd bound).
fn deletes(request: &Request) -> bool {
    match request {
        Request::Delete { .. } => true,
        Request::Multi(ops) => ops.iter().any(|op| matches!(op, MultiOp::Delete { .. })),
        _ => false,
    }
}
