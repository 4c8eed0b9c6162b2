//! The canonical form of a model state: client symmetry and rank
//! abstraction (`check --symmetry`, `check --ranks`).
//!
//! - **Symmetry.** Clients with the same workload are interchangeable when
//!   their recipe treats ids only as names (it declares so with
//!   [`RenameRecipe::SYMMETRIC`]). Of all renamings of such clients, one
//!   representative is explored: the clients are sorted by a key that no
//!   renaming changes (each client's own state with every client renamed to
//!   client 0), and clients with equal keys are tried in every order, the
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

use crate::cached::Cached;
use crate::model::{ModelRecipe, RecipeModel};
use crate::server::ModelServer;
use crate::shorten::StatePath;
use crate::state::{ClientState, Inbound, ItemTally, ModelState};
use std::collections::BTreeMap;
use std::hash::Hash;
use zk_recipes::rename::{rename_result_of, Rename, RenameRecipe, Renaming};
use zk_recipes::FencingToken;

/// What a recipe's renaming allows, recorded when a model is built for a
/// recipe that declares one.
#[derive(Clone, Debug)]
pub struct Renamable<R: ModelRecipe> {
    /// The recipe may be renamed client for client (`RenameRecipe::SYMMETRIC`).
    pub symmetric: bool,
    /// Clients with the same workload share a class (see [`workload_classes`]).
    classes: Vec<usize>,
    canonical: CanonicalFn<R>,
    renamed: RenamedFn<R>,
}

/// [`canonical`] for one recipe type.
type CanonicalFn<R> = fn(&RecipeModel<R>, &ModelState<R>, &Canonical) -> ModelState<R>;

/// [`renamed`] for one recipe type.
type RenamedFn<R> = fn(&RecipeModel<R>, &ModelState<R>, &[usize], bool) -> ModelState<R>;

impl<R: ModelRecipe + RenameRecipe> Renamable<R> {
    pub fn of(model: &RecipeModel<R>) -> Renamable<R> {
        Renamable {
            symmetric: R::SYMMETRIC,
            classes: workload_classes(model),
            canonical: canonical::<R>,
            renamed: renamed::<R>,
        }
    }
}

/// Which canonical form a model explores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Canonical {
    pub symmetry: bool,
    pub ranks: bool,
}

impl Canonical {
    pub fn is_identity(self) -> bool {
        !self.symmetry && !self.ranks
    }
}

impl<R: ModelRecipe> Renamable<R> {
    /// The canonical form of `state`.
    pub fn apply(
        &self,
        model: &RecipeModel<R>,
        state: &ModelState<R>,
        form: Canonical,
    ) -> ModelState<R> {
        (self.canonical)(model, state, &form)
    }

    /// `state` with client `c` renamed to `order[c]` (and, with `ranks`,
    /// its numbers ranked): one member of its class, for the self-check.
    pub fn renamed(
        &self,
        model: &RecipeModel<R>,
        state: &ModelState<R>,
        order: &[usize],
        ranks: bool,
    ) -> ModelState<R> {
        (self.renamed)(model, state, order, ranks)
    }
}

/// The parts of a state a renaming rewrites, unshared.
struct Parts<R: ModelRecipe> {
    server: ModelServer,
    clients: Vec<ClientState<R>>,
    /// The highest token granted.
    fence: Option<FencingToken>,
}

fn canonical<R: ModelRecipe + RenameRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    form: &Canonical,
) -> ModelState<R> {
    let n = state.clients.len();
    let first = model.initial_state().first_session;
    let sorted = model.child_order == crate::ChildOrderMode::Sorted;
    let mut renaming = Renaming::new::<R>((0..n).collect(), first, form.ranks, sorted);
    if form.ranks {
        // Collect every zxid and sequence number (a renaming that changes nothing).
        rename_parts(&mut Parts::of(state), state, &mut renaming);
    }
    renaming.rank();
    let orders = match form.symmetry {
        true => candidate_orders(model, state, &renaming, form.ranks),
        false => vec![(0..n).collect()],
    };
    let keeps_clients = orders.len() == 1 && orders[0].iter().enumerate().all(|(c, p)| c == *p);
    if !form.ranks && keeps_clients {
        // Already in canonical order, and nothing else to rename.
        return state.clone();
    }
    let mut best: Option<(u64, ModelState<R>)> = None;
    for order in orders {
        let mut r = renaming.with_clients(order);
        let mut parts = Parts::of(state);
        rename_parts(&mut parts, state, &mut r);
        let candidate = assemble(state, parts, &r);
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

fn renamed<R: ModelRecipe + RenameRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    order: &[usize],
    ranks: bool,
) -> ModelState<R> {
    let first = model.initial_state().first_session;
    let sorted = model.child_order == crate::ChildOrderMode::Sorted;
    let mut r = Renaming::new::<R>(order.to_vec(), first, ranks, sorted);
    if ranks {
        rename_parts(&mut Parts::of(state), state, &mut r);
    }
    r.rank();
    let mut parts = Parts::of(state);
    rename_parts(&mut parts, state, &mut r);
    assemble(state, parts, &r)
}

impl<R: ModelRecipe> Parts<R> {
    /// Unshared copies of the parts of `state` a renaming rewrites.
    fn of(state: &ModelState<R>) -> Parts<R> {
        Parts {
            server: (*state.server).clone(),
            clients: state.clients.iter().map(|c| (**c).clone()).collect(),
            fence: state.fence,
        }
    }
}

/// Renames the server, every client and its inbox in place. `original` is
/// the state the parts were taken from (replies are matched with the
/// requests they answer there, by original path).
fn rename_parts<R: ModelRecipe + RenameRecipe>(
    parts: &mut Parts<R>,
    original: &ModelState<R>,
    r: &mut Renaming,
) {
    match &mut parts.server {
        ModelServer::One(server) => server.rename(r),
        ModelServer::Ensemble(_) => unreachable!("refused on an ensemble (canonical_error)"),
    }
    for (client, before) in parts.clients.iter_mut().zip(&original.clients) {
        rename_client(client, before, r);
    }
    if let Some(token) = parts.fence {
        // Every client's recipe renames tokens alike.
        let recipe = &original.clients[0].session.recipe;
        parts.fence = Some(recipe.rename_token(r, token));
    }
}

fn rename_client<R: ModelRecipe + RenameRecipe>(
    client: &mut ClientState<R>,
    before: &ClientState<R>,
    r: &mut Renaming,
) {
    // The k-th reply in the inbox answers the k-th request in flight.
    let mut answered = before
        .session
        .in_flight
        .iter()
        .map(|(_, request, _)| request);
    for inbound in client.inbox.iter_mut() {
        match inbound {
            Inbound::Reply { result, zxid } => {
                rename_result_of(result, answered.next(), r);
                *zxid = r.zxid(*zxid);
            }
            Inbound::Event(event) => event.rename(r),
        }
    }
    if let Some(holding) = &mut client.holding {
        holding.token = client.session.recipe.rename_token(r, holding.token);
        holding.session.rename(r);
    }
    client.session_id.rename(r);
    client.session.rename(r);
}

/// The state made of the renamed parts, clients moved to their new index.
fn assemble<R: ModelRecipe + RenameRecipe>(
    state: &ModelState<R>,
    parts: Parts<R>,
    r: &Renaming,
) -> ModelState<R> {
    let n = parts.clients.len();
    let mut clients: Vec<Option<Cached<ClientState<R>>>> = vec![None; n];
    for (c, client) in parts.clients.into_iter().enumerate() {
        clients[r.client(c)] = Some(Cached::new(client));
    }
    ModelState {
        server: Cached::new(parts.server),
        clients: clients
            .into_iter()
            .map(|c| c.expect("a permutation"))
            .collect(),
        budget: state.budget,
        fence: parts.fence,
        items: rename_items(&state.items, r),
        violations: state.violations,
    }
}

/// Queue tallies: the set of clients that took an item follows them.
fn rename_items(
    items: &BTreeMap<Vec<u8>, ItemTally>,
    r: &Renaming,
) -> BTreeMap<Vec<u8>, ItemTally> {
    if r.keeps_clients() {
        return items.clone();
    }
    items
        .iter()
        .map(|(item, tally)| {
            let takers = (0..32)
                .filter(|c| tally.takers & (1 << c) != 0)
                .fold(0u32, |bits, c| bits | 1 << r.client(c));
            (item.clone(), ItemTally { takers, ..*tally })
        })
        .collect()
}

/// Every client order worth trying: clients sorted by a key no renaming
/// changes (their workload, then their own state with every client
/// anonymous); clients with equal keys in every order.
fn candidate_orders<R: ModelRecipe + RenameRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
    renaming: &Renaming,
    ranks: bool,
) -> Vec<Vec<usize>> {
    let class = &model.renamable().expect("a renaming").classes;
    let keys: Vec<(usize, u64)> = state
        .clients
        .iter()
        .enumerate()
        .map(|(c, client)| {
            let key = || {
                let mut anonymous = renaming.anonymous();
                let mut copy = (**client).clone();
                rename_client(&mut copy, client, &mut anonymous);
                fingerprint(&copy)
            };
            // Without ranks a client's key depends on the client alone.
            let key = match ranks {
                true => key(),
                false => memo_key(state.clients[c].hash_value(), key),
            };
            (class[c], key)
        })
        .collect();
    // Position p of the sorted list is taken by client `by_key[p]`.
    let mut by_key: Vec<usize> = (0..keys.len()).collect();
    by_key.sort_by_key(|c| keys[*c]);
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
    // The p-th place of the sorted list is index `slots[p]`: each class
    // keeps its own indices (its workload), also when classes interleave
    // (the shared lock's writers 0 and 2, reader 1).
    let mut slots: Vec<usize> = (0..keys.len()).collect();
    slots.sort_by_key(|c| (class[*c], *c));
    // `order[p]` is the client placed at p; a renaming maps client -> slots[p].
    orders
        .into_iter()
        .map(|placed| {
            let mut to = vec![0; placed.len()];
            for (p, c) in placed.into_iter().enumerate() {
                to[c] = slots[p];
            }
            to
        })
        .collect()
}

/// Hashes a key that is a hash already.
#[derive(Default)]
struct HashIsKey(u64);

impl std::hash::Hasher for HashIsKey {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys")
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

type KeyMap = std::collections::HashMap<u64, u64, std::hash::BuildHasherDefault<HashIsKey>>;

thread_local! {
    /// Keys of clients already seen, by their hash (a checker thread's own).
    static KEYS: std::cell::RefCell<KeyMap> = Default::default();
}

/// Most keys a thread remembers before it starts afresh.
const MEMO_LIMIT: usize = 1 << 20;

/// The key of a client whose hash is `hash`, computed once per thread. A
/// hash collision only makes a representative less canonical (a state
/// explored twice), never a wrong one.
fn memo_key(hash: u64, compute: impl FnOnce() -> u64) -> u64 {
    if let Some(key) = KEYS.with(|keys| keys.borrow().get(&hash).copied()) {
        return key;
    }
    let key = compute();
    KEYS.with(|keys| {
        let mut keys = keys.borrow_mut();
        if keys.len() >= MEMO_LIMIT {
            keys.clear();
        }
        keys.insert(hash, key);
    });
    key
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

/// What the self-check saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelfCheck {
    /// States checked (each against one renaming).
    pub states: usize,
    /// Successors compared.
    pub successors: usize,
}

/// A renaming that changed what the model does: the recipe's declaration
/// is wrong (or the recipe orders by ids it declared as names).
#[derive(Debug, thiserror::Error)]
pub enum SymmetryBreak {
    #[error(
        "after {steps} random steps, renaming clients by {order:?} changes the verdict of `{property}`"
    )]
    Verdict {
        steps: usize,
        order: Vec<usize>,
        property: &'static str,
    },
    #[error(
        "after {steps} random steps, renaming clients by {order:?}{ranked} changes what can \
         happen next: {only_original} canonical successor(s) only without it, {only_renamed} \
         only with it"
    )]
    Successors {
        steps: usize,
        order: Vec<usize>,
        ranked: &'static str,
        only_original: usize,
        only_renamed: usize,
    },
}

/// Tests a recipe's renaming on states reached by `walks` seeded random
/// walks of at most `depth` steps: at each state, a random renaming of
/// interchangeable clients (when `form.symmetry`) and the rank abstraction
/// (when `form.ranks`) must leave every property's verdict alone, and the
/// canonical forms of the successors must be the same set before and
/// after renaming. A recipe that orders clients by their ids fails here.
pub fn self_check<R: ModelRecipe>(
    model: &RecipeModel<R>,
    form: Canonical,
    walks: usize,
    depth: usize,
    seed: u64,
) -> Result<SelfCheck, SymmetryBreak> {
    use stateright::{Expectation, Model as _};
    let renamable = model
        .renamable()
        .expect("self_check needs a recipe with a renaming");
    let checked = model.clone().with_canonical(form).with_reduction(false);
    let raw = checked.raw();
    let classes = workload_classes(model);
    let mut random = SplitMix(seed);
    let mut seen = SelfCheck::default();
    for _ in 0..walks {
        let mut state = raw.initial();
        for steps in 0..depth {
            let order = match form.symmetry {
                true => random_order(&classes, &mut random),
                false => (0..classes.len()).collect(),
            };
            let renamed = renamable.renamed(model, &state, &order, form.ranks);
            for property in raw.properties() {
                // `eventually` is judged over paths, not states.
                if property.expectation == Expectation::Eventually {
                    continue;
                }
                if (property.condition)(&raw, &state) != (property.condition)(&raw, &renamed) {
                    return Err(SymmetryBreak::Verdict {
                        steps,
                        order,
                        property: property.name,
                    });
                }
            }
            let before = canonical_successors(&checked, &state);
            let after = canonical_successors(&checked, &renamed);
            seen.successors += before.len();
            if before != after {
                return Err(SymmetryBreak::Successors {
                    steps,
                    order,
                    ranked: if form.ranks { " with ranks" } else { "" },
                    only_original: before.difference(&after).count(),
                    only_renamed: after.difference(&before).count(),
                });
            }
            seen.states += 1;
            let mut enabled = Vec::new();
            raw.all_actions(&state, &mut enabled);
            if enabled.is_empty() {
                break;
            }
            let action = enabled[random.below(enabled.len())];
            state = raw.step(&state, action);
        }
    }
    Ok(seen)
}

/// The canonical forms of every successor, by their fingerprints.
fn canonical_successors<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
) -> std::collections::BTreeSet<u64> {
    let mut enabled = Vec::new();
    model.all_actions(state, &mut enabled);
    enabled
        .into_iter()
        .map(|action| fingerprint(&model.canonical_of(&model.step(state, action))))
        .collect()
}

/// A random permutation that moves clients within their workload class.
fn random_order(classes: &[usize], random: &mut SplitMix) -> Vec<usize> {
    let mut order: Vec<usize> = (0..classes.len()).collect();
    for class in classes
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
    {
        let members: Vec<usize> = (0..classes.len())
            .filter(|c| classes[*c] == class)
            .collect();
        let mut targets = members.clone();
        for i in (1..targets.len()).rev() {
            targets.swap(i, random.below(i + 1));
        }
        for (c, target) in members.into_iter().zip(targets) {
            order[c] = target;
        }
    }
    order
}

/// A small seeded random source (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}
