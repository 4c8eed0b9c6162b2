//! The canonical form of a model state: client symmetry and rank
//! abstraction (`check --symmetry`, `check --ranks`).
//!
//! - **Symmetry.** Clients with the same workload are interchangeable when
//!   their recipe treats ids only as names (it declares so with
//!   [`RenameRecipe::SYMMETRIC`]). Of all renamings of such clients, one
//!   representative is explored: the clients are sorted by a key that no
//!   renaming changes (its workload, call and session counters, the lowest
//!   sequence number it knows, then its own state with every client renamed
//!   to client 0), and clients with equal keys are tried in every order, the
//!   state with the smallest hash winning.
//! - **Ranks.** Zxids and each parent's sequence numbers are replaced by
//!   their ranks among the values the state holds, so a protocol that loops
//!   comes back to a state it has seen.
//!
//! Both go through one [`Renaming`] (`zk_recipes::rename`), applied to the
//! server, every client (session layer, recipe, inbox) and the model's own
//! records (holdings, the fence, queue tallies). `RecipeModel::next_state`
//! returns canonical states; a discovered path is turned back into the
//! concrete run it stands for by [`concretize`], which also checks that the
//! renaming really is a symmetry of the recipe.

mod parts;
mod self_check;

pub use self_check::{self_check, SelfCheck, SymmetryBreak};

use crate::cached::Cached;
pub use crate::model::Renamable;
use crate::model::{ModelRecipe, RecipeModel};
pub use crate::setup::Canonical;
use crate::shorten::StatePath;
use crate::state::{ClientState, ModelState, Pending};
use parts::{rename_items, Direct, Rewrite};
use std::hash::Hash;
use std::sync::Arc;
use zk_recipes::rename::{Numbers, RenameRecipe, Renaming};
use zk_recipes::zk::SessionId;

impl<R: ModelRecipe + RenameRecipe> Renamable<R> {
    pub fn of(model: &RecipeModel<R>) -> Renamable<R> {
        let classes = workload_classes(model);
        Renamable {
            symmetric: R::SYMMETRIC,
            slots: class_slots(&classes),
            classes,
            canonical: canonical::<R>,
            direct: canonical_direct::<R>,
            renamed: renamed::<R>,
        }
    }
}

/// The builder that records a recipe's renaming (here, beside the
/// functions it records).
impl<R: ModelRecipe> RecipeModel<R> {
    /// Records the recipe's renaming, so the model can explore canonical
    /// states (builder style; every built-in recipe declares one).
    pub fn with_renaming(mut self) -> Self
    where
        R: zk_recipes::rename::RenameRecipe,
    {
        self.renamable = Some(Renamable::of(&self));
        self
    }
}

fn canonical<R: ModelRecipe + RenameRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    form: &Canonical,
) -> ModelState<R> {
    let key = collector_key(model, form.ranks);
    let collector = || collector::<R>(model, form.ranks);
    parts::with_memo(key, collector, |memo| {
        canonical_through(model, state, form, memo)
    })
}

/// The canonical form of `state` with every part renamed afresh, no memo:
/// what the memoized form must equal (the self-check compares them).
fn canonical_direct<R: ModelRecipe + RenameRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    form: &Canonical,
) -> ModelState<R> {
    let mut direct = Direct {
        collector: collector::<R>(model, form.ranks),
    };
    canonical_through(model, state, form, &mut direct)
}

/// The canonical form of `state`, its parts renamed through `rewrite`.
fn canonical_through<R: ModelRecipe + RenameRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    form: &Canonical,
    rewrite: &mut impl Rewrite<R>,
) -> ModelState<R> {
    // Looked up once here, then handed to every use below.
    let numbers = numbers_of(state, rewrite);
    // Most successors of a canonical state add at most the next zxid or
    // sequence number, and drop none: their numbers are their own ranks.
    let dense = !form.ranks || Numbers::are_dense(&numbers);
    if !form.symmetry && dense {
        return state.clone();
    }
    let renaming = ranked(&numbers, dense, rewrite.collector());
    if !form.symmetry {
        return renamed_state(state, &numbers, &renaming, rewrite);
    }
    let orders = candidate_orders(model, state, &numbers, &renaming, rewrite);
    let keeps_clients = orders.len() == 1 && orders[0].iter().enumerate().all(|(c, p)| c == *p);
    if keeps_clients && renaming.ranks_are_identity() {
        // Already in canonical order, every number its own rank.
        return state.clone();
    }
    let mut best: Option<(u64, ModelState<R>)> = None;
    for order in orders {
        let candidate = renamed_state(state, &numbers, &renaming.with_clients(order), rewrite);
        if keeps_clients {
            return candidate;
        }
        let hash = fingerprint(&candidate);
        if best.as_ref().is_none_or(|(h, _)| hash < *h) {
            best = Some((hash, candidate));
        }
    }
    best.expect("at least one order").1
}

/// A collecting renaming of the model's numbering, clients kept.
fn collector<R: ModelRecipe + RenameRecipe>(model: &RecipeModel<R>, ranks: bool) -> Renaming {
    let (first, ranks, sorted, clients) = collector_key(model, ranks);
    Renaming::new::<R>((0..clients).collect(), SessionId(first), ranks, sorted)
}

/// What [`collector`] builds the model's collecting renaming from.
fn collector_key<R: ModelRecipe>(model: &RecipeModel<R>, ranks: bool) -> parts::CollectorKey {
    (
        model.initial_state().first_session.0,
        ranks,
        model.child_order == crate::ChildOrderMode::Sorted,
        model.clients.len(),
    )
}

/// The zxids and sequence numbers of every part of `state`: the server,
/// then each client, then the fencing token (nothing for a part when the
/// rewrite does not rank).
fn numbers_of<R: ModelRecipe + RenameRecipe>(
    state: &ModelState<R>,
    rewrite: &mut impl Rewrite<R>,
) -> Vec<Arc<Numbers>> {
    let mut parts = Vec::with_capacity(state.clients.len() + 2);
    parts.push(rewrite.server_numbers(&state.server));
    parts.extend(state.clients.iter().map(|c| rewrite.client_numbers(c)));
    if let Some(token) = state.fence {
        parts.push(rewrite.token_numbers(&state.clients[0], token));
    }
    parts
}

/// The ranked renaming of a state whose parts hold `numbers`, clients
/// kept; `dense` when the numbers are their own ranks
/// ([`Numbers::are_dense`], and always without ranks, where no number is
/// ranked). `collector` is the model's collecting renaming.
fn ranked(numbers: &[Arc<Numbers>], dense: bool, collector: &Renaming) -> Renaming {
    let mut renaming = collector.clone();
    if dense {
        renaming.rank_dense();
        return renaming;
    }
    for part in numbers {
        renaming.collect(part);
    }
    renaming.rank();
    renaming
}

/// `state` renamed by the ranked renaming `r`, clients moved to their new
/// index; `numbers` are its parts' ([`numbers_of`]).
fn renamed_state<R: ModelRecipe + RenameRecipe>(
    state: &ModelState<R>,
    numbers: &[Arc<Numbers>],
    r: &Renaming,
    rewrite: &mut impl Rewrite<R>,
) -> ModelState<R> {
    let mut clients: Vec<Option<Cached<ClientState<R>>>> = vec![None; state.clients.len()];
    for (c, client) in state.clients.iter().enumerate() {
        clients[r.client(c)] = Some(rewrite.client(client, &numbers[1 + c], r));
    }
    let fence = state.fence.map(|token| {
        state.clients[0]
            .session
            .recipe
            .rename_token(&mut r.clone(), token)
    });
    ModelState {
        server: rewrite.server(&state.server, &numbers[0], r),
        clients: clients
            .into_iter()
            .map(|c| c.expect("a permutation"))
            .collect(),
        budget: state.budget,
        fence,
        items: rename_items(&state.items, r),
        violations: state.violations,
    }
}

/// `state` with client `c` renamed to `order[c]` (and, with `ranks`, its
/// numbers ranked), every part renamed afresh: one member of its class, for
/// the self-check.
fn renamed<R: ModelRecipe + RenameRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    order: &[usize],
    ranks: bool,
) -> ModelState<R> {
    let mut direct = Direct {
        collector: collector::<R>(model, ranks),
    };
    let numbers = numbers_of(state, &mut direct);
    let dense = !ranks || Numbers::are_dense(&numbers);
    let renaming = ranked(&numbers, dense, &direct.collector).with_clients(order.to_vec());
    renamed_state(state, &numbers, &renaming, &mut direct)
}

/// What clients are sorted by: facts about a client that no client
/// renaming changes, the slowest-changing first.
///
/// Any such key gives a canonical form (one state per class of renamed
/// states: ties are tried in every order), but a step moves a client whose
/// key it changes past every client it now sorts beyond, and a moved client
/// renames the whole state: the server and every client miss the memo of
/// renamed parts. Leading with
/// facts that change only at application calls or node creations, rather
/// than with the hash of the client's whole state alone, keeps clients in
/// place on most steps (on the 4-client lock, 19% of successors move a
/// client instead of 67%, and states are generated 1.7× faster).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ClientKey {
    /// Clients of different workloads never swap.
    class: usize,
    next_step: u8,
    generation: u8,
    pending: Option<Pending>,
    holds: bool,
    /// The lowest rank among the sequence numbers the client knows (its
    /// own node, for most recipes).
    lowest_sequence: Option<i32>,
    /// The hash of the client's state with every client renamed to 0.
    anonymous_hash: u64,
}

/// Every client order worth trying: clients sorted by [`ClientKey`];
/// clients with equal keys in every order.
fn candidate_orders<R: ModelRecipe + RenameRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    numbers: &[Arc<Numbers>],
    renaming: &Renaming,
    rewrite: &mut impl Rewrite<R>,
) -> Vec<Vec<usize>> {
    let Renamable {
        classes: class,
        slots,
        ..
    } = model.renamable().expect("a renaming");
    let anonymous = renaming.anonymous();
    let keys: Vec<ClientKey> = state
        .clients
        .iter()
        .enumerate()
        .map(|(c, client)| ClientKey {
            class: class[c],
            next_step: client.next_step,
            generation: client.generation,
            pending: client.pending,
            holds: client.holding.is_some(),
            lowest_sequence: renaming.lowest_sequence_rank(&numbers[1 + c]),
            anonymous_hash: rewrite.key(client, &numbers[1 + c], &anonymous),
        })
        .collect();
    // Position p of the sorted list is taken by client `by_key[p]`.
    let mut by_key: Vec<usize> = (0..keys.len()).collect();
    by_key.sort_by_key(|c| keys[*c]);
    // The p-th place of the sorted list is index `slots[p]`: each class
    // keeps its own indices (its workload), also when classes interleave
    // (the shared lock's writers 0 and 2, reader 1).
    // `placed[p]` is the client placed at p; a renaming maps client -> slots[p].
    let renaming_of = |placed: &[usize]| {
        let mut to = vec![0; placed.len()];
        for (p, c) in placed.iter().enumerate() {
            to[*c] = slots[p];
        }
        to
    };
    if by_key.windows(2).all(|w| keys[w[0]] != keys[w[1]]) {
        // No ties (nearly every state): one order.
        return vec![renaming_of(&by_key)];
    }
    let mut orders = vec![Vec::new()];
    let mut start = 0;
    while start < by_key.len() {
        let end = (start..by_key.len())
            .find(|p| keys[by_key[*p]] != keys[by_key[start]])
            .unwrap_or(by_key.len());
        orders = orders
            .into_iter()
            .flat_map(|prefix: Vec<usize>| {
                permutations(&by_key[start..end])
                    .into_iter()
                    .map(move |tail| {
                        let mut order = prefix.clone();
                        order.extend(tail);
                        order
                    })
            })
            .collect();
        start = end;
    }
    orders.iter().map(|placed| renaming_of(placed)).collect()
}

/// The indices of the clients sorted by class (then index): the p-th place
/// of a sorted list of clients is index `slots[p]`.
fn class_slots(classes: &[usize]) -> Vec<usize> {
    let mut slots: Vec<usize> = (0..classes.len()).collect();
    slots.sort_by_key(|c| (classes[*c], *c));
    slots
}

/// Clients with the same workload share a class (the lowest such index).
/// Clients of different classes are never swapped.
fn workload_classes<R: ModelRecipe>(model: &RecipeModel<R>) -> Vec<usize> {
    (0..model.clients.len())
        .map(|c| {
            (0..=c)
                .find(|&d| model.clients[d].workload == model.clients[c].workload)
                .expect("c itself")
        })
        .collect()
}

fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (i, first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, *first);
            all.push(tail);
        }
    }
    all
}

/// A hash that is the same in every process (fixed seeds).
pub fn fingerprint<T: Hash>(value: &T) -> u64 {
    ahash::RandomState::with_seeds(0x5eed_c0de, 0x0dd_ba11, 0xcafe, 0xf00d).hash_one(value)
}

/// Why a path of canonical states could not be turned into a concrete run.
#[derive(Debug, thiserror::Error)]
#[error(
    "step {step}: no action of the concrete run leads where the canonical path goes; \
     the recipe's renaming is not a symmetry of its behaviour (see zk_recipes::rename)"
)]
pub struct NotASymmetry {
    pub step: usize,
}

/// The concrete run a path of canonical states stands for: from the
/// model's uncanonical initial state, at each step the action whose
/// successor has the path's next canonical state.
pub fn concretize<R: ModelRecipe>(
    model: &RecipeModel<R>,
    path: StatePath<R>,
) -> Result<StatePath<R>, NotASymmetry> {
    if !model.is_canonical() {
        return Ok(path);
    }
    let raw = model.raw();
    let mut concrete = Vec::with_capacity(path.len());
    let mut state = raw.initial();
    let mut enabled = Vec::new();
    for (step, window) in path.windows(2).enumerate() {
        let target = &window[1].0;
        enabled.clear();
        raw.all_actions(&state, &mut enabled);
        let found = enabled.iter().find_map(|&action| {
            let next = raw.step(&state, action);
            (model.canonical_of(&next) == *target).then_some((action, next))
        });
        let Some((action, next)) = found else {
            return Err(NotASymmetry { step: step + 1 });
        };
        concrete.push((std::mem::replace(&mut state, next), Some(action)));
    }
    concrete.push((state, None));
    Ok(concrete)
}
