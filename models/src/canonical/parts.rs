//! Renaming a model state part by part: the server, each client (its
//! session layer, recipe and inbox), the queue tallies.
//!
//! A step changes one or two parts of a state and shares the rest with the
//! state it came from, so most parts of a successor have been renamed
//! before, by the same renaming as far as they can tell. [`Memo`] keeps,
//! per checker thread, the numbers each part holds (by the part's hash)
//! and each part's renamed form (by the part's hash and the renaming's
//! [`Renaming::digest`] of those numbers); a part the renaming leaves alone
//! is shared as it is. [`Direct`] renames every part afresh: the reference
//! the memo is tested against, and what the self-check uses.
//!
//! A memo entry is found by 64-bit hashes, as the checker finds states by
//! their 64-bit fingerprints: two different parts with the same hash would
//! be taken for one another.

use crate::cached::Cached;
use crate::model::ModelRecipe;
use crate::server::ModelServer;
use crate::state::{ClientState, Inbound, ItemTally};
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;
use std::sync::Arc;
use zk_recipes::rename::{rename_result_of, Numbers, Rename, RenameRecipe, Renaming};
use zk_recipes::FencingToken;

/// How the parts of a state are renamed.
pub(super) trait Rewrite<R: ModelRecipe + RenameRecipe> {
    /// A collecting renaming of the model's numbering (clients kept).
    fn collector(&self) -> &Renaming;
    /// The zxids and sequence numbers the server holds.
    fn server_numbers(&mut self, server: &Cached<ModelServer>) -> Arc<Numbers>;
    /// The zxids and sequence numbers a client holds.
    fn client_numbers(&mut self, client: &Cached<ClientState<R>>) -> Arc<Numbers>;
    /// The zxids and sequence numbers a fencing token holds (every
    /// client's recipe renames tokens alike: `client` is any of them).
    fn token_numbers(
        &mut self,
        client: &Cached<ClientState<R>>,
        token: FencingToken,
    ) -> Arc<Numbers>;
    /// The server, renamed by a ranked renaming; `numbers` are its
    /// [`Rewrite::server_numbers`].
    fn server(
        &mut self,
        server: &Cached<ModelServer>,
        numbers: &Numbers,
        r: &Renaming,
    ) -> Cached<ModelServer>;
    /// A client, renamed by a ranked renaming; `numbers` are its
    /// [`Rewrite::client_numbers`].
    fn client(
        &mut self,
        client: &Cached<ClientState<R>>,
        numbers: &Numbers,
        r: &Renaming,
    ) -> Cached<ClientState<R>>;
    /// The hash of a client renamed by `anonymous` (every client is client
    /// 0); `numbers` are its [`Rewrite::client_numbers`].
    fn key(
        &mut self,
        client: &Cached<ClientState<R>>,
        numbers: &Numbers,
        anonymous: &Renaming,
    ) -> u64;
}

/// Renames every part afresh.
pub(super) struct Direct {
    /// A collecting renaming of the model's numbering, to collect with.
    pub collector: Renaming,
}

impl<R: ModelRecipe + RenameRecipe> Rewrite<R> for Direct {
    fn collector(&self) -> &Renaming {
        &self.collector
    }

    fn server_numbers(&mut self, server: &Cached<ModelServer>) -> Arc<Numbers> {
        let mut r = self.collector.clone();
        rename_server(&mut (**server).clone(), &mut r);
        Arc::new(r.collected())
    }

    fn client_numbers(&mut self, client: &Cached<ClientState<R>>) -> Arc<Numbers> {
        let mut r = self.collector.clone();
        rename_client(&mut (**client).clone(), client, &mut r);
        Arc::new(r.collected())
    }

    fn token_numbers(
        &mut self,
        client: &Cached<ClientState<R>>,
        token: FencingToken,
    ) -> Arc<Numbers> {
        let mut r = self.collector.clone();
        client.session.recipe.rename_token(&mut r, token);
        Arc::new(r.collected())
    }

    fn server(
        &mut self,
        server: &Cached<ModelServer>,
        _: &Numbers,
        r: &Renaming,
    ) -> Cached<ModelServer> {
        let mut renamed = (**server).clone();
        rename_server(&mut renamed, &mut r.clone());
        Cached::new(renamed)
    }

    fn client(
        &mut self,
        client: &Cached<ClientState<R>>,
        _: &Numbers,
        r: &Renaming,
    ) -> Cached<ClientState<R>> {
        let mut renamed = (**client).clone();
        rename_client(&mut renamed, client, &mut r.clone());
        Cached::new(renamed)
    }

    fn key(&mut self, client: &Cached<ClientState<R>>, _: &Numbers, anonymous: &Renaming) -> u64 {
        let mut renamed = (**client).clone();
        rename_client(&mut renamed, client, &mut anonymous.clone());
        super::fingerprint(&renamed)
    }
}

/// Renames through this thread's memo of parts renamed before; what it has
/// not seen it renames [`Direct`]ly.
pub(super) struct Memo<'a, R: ModelRecipe> {
    direct: Direct,
    parts: &'a mut Parts<R>,
}

/// What one thread remembers for one recipe type.
pub(super) struct Parts<R: ModelRecipe> {
    server_numbers: ByHash<Arc<Numbers>, NUMBERS>,
    client_numbers: ByHash<Arc<Numbers>, NUMBERS>,
    servers: ByHash<Cached<ModelServer>, PARTS>,
    clients: ByHash<Cached<ClientState<R>>, PARTS>,
    keys: ByHash<u64, NUMBERS>,
    token_numbers: ByHash<Arc<Numbers>, TOKENS>,
    /// The numbers of every part when nothing is ranked.
    none: Arc<Numbers>,
    /// The last collecting renaming asked for, by what it was built from.
    collector: Option<(CollectorKey, Renaming)>,
}

/// What a model's collecting renaming is built from: client 0's first
/// session, ranks, sorted children, the number of clients.
pub(super) type CollectorKey = (i64, bool, bool, usize);

impl<R: ModelRecipe> Default for Parts<R> {
    fn default() -> Self {
        Parts {
            server_numbers: ByHash::default(),
            client_numbers: ByHash::default(),
            servers: ByHash::default(),
            clients: ByHash::default(),
            keys: ByHash::default(),
            token_numbers: ByHash::default(),
            none: Arc::default(),
            collector: None,
        }
    }
}

/// Renamed parts a thread keeps (each a few KB).
const PARTS: usize = 1 << 13;
/// Numbers and keys a thread keeps. Three tables of 2^14 slots stay in a
/// core's cache better than 2^16 did (the 4-client lock 2% faster, single
/// thread); 2^12 missed too often (4% slower).
const NUMBERS: usize = 1 << 14;
/// Fencing tokens' numbers a thread keeps.
const TOKENS: usize = 1 << 8;

thread_local! {
    /// Each recipe type's [`Parts`], for this checker thread.
    static MEMOS: RefCell<HashMap<TypeId, Box<dyn Any>>> = RefCell::default();
}

/// Runs `f` with this thread's memo for recipe type `R`, renaming with
/// the collecting renaming `collector` builds (built once per `key`).
pub(super) fn with_memo<R: ModelRecipe, T>(
    key: CollectorKey,
    collector: impl FnOnce() -> Renaming,
    f: impl FnOnce(&mut Memo<'_, R>) -> T,
) -> T {
    MEMOS.with(|memos| {
        let mut memos = memos.borrow_mut();
        let parts = memos
            .entry(TypeId::of::<R>())
            .or_insert_with(|| Box::new(Parts::<R>::default()))
            .downcast_mut::<Parts<R>>()
            .expect("memos are keyed by their type");
        // Lent to the memo and put back, not cloned: a renaming's clone
        // and drop are a handful of reference counts per state.
        let collector = match parts.collector.take() {
            Some((built_for, collector)) if built_for == key => collector,
            _ => collector(),
        };
        let mut memo = Memo {
            direct: Direct { collector },
            parts,
        };
        let result = f(&mut memo);
        memo.parts.collector = Some((key, memo.direct.collector));
        result
    })
}

impl<R: ModelRecipe + RenameRecipe> Rewrite<R> for Memo<'_, R> {
    fn collector(&self) -> &Renaming {
        &self.direct.collector
    }

    fn server_numbers(&mut self, server: &Cached<ModelServer>) -> Arc<Numbers> {
        if !self.direct.collector.ranks_sequences() {
            return self.parts.none.clone();
        }
        let key = (server.hash_value(), 0);
        let direct = &mut self.direct;
        let numbers = self
            .parts
            .server_numbers
            .get_or(key, || Rewrite::<R>::server_numbers(direct, server));
        numbers.clone()
    }

    fn client_numbers(&mut self, client: &Cached<ClientState<R>>) -> Arc<Numbers> {
        if !self.direct.collector.ranks_sequences() {
            return self.parts.none.clone();
        }
        let key = (client.hash_value(), 0);
        let direct = &mut self.direct;
        let numbers = self
            .parts
            .client_numbers
            .get_or(key, || direct.client_numbers(client));
        numbers.clone()
    }

    fn token_numbers(
        &mut self,
        client: &Cached<ClientState<R>>,
        token: FencingToken,
    ) -> Arc<Numbers> {
        if !self.direct.collector.ranks_sequences() {
            return self.parts.none.clone();
        }
        let direct = &mut self.direct;
        let numbers = self
            .parts
            .token_numbers
            .get_or((token.0 as u64, 0), || direct.token_numbers(client, token));
        numbers.clone()
    }

    fn server(
        &mut self,
        server: &Cached<ModelServer>,
        numbers: &Numbers,
        r: &Renaming,
    ) -> Cached<ModelServer> {
        let (digest, unchanged) = digest(r, numbers);
        if unchanged {
            return server.clone();
        }
        let direct = &mut self.direct;
        let key = (server.hash_value(), digest);
        let renamed = self
            .parts
            .servers
            .get_or(key, || Rewrite::<R>::server(direct, server, numbers, r));
        renamed.clone()
    }

    fn client(
        &mut self,
        client: &Cached<ClientState<R>>,
        numbers: &Numbers,
        r: &Renaming,
    ) -> Cached<ClientState<R>> {
        let (digest, unchanged) = digest(r, numbers);
        if unchanged {
            return client.clone();
        }
        let direct = &mut self.direct;
        let key = (client.hash_value(), digest);
        let renamed = self
            .parts
            .clients
            .get_or(key, || direct.client(client, numbers, r));
        renamed.clone()
    }

    fn key(
        &mut self,
        client: &Cached<ClientState<R>>,
        numbers: &Numbers,
        anonymous: &Renaming,
    ) -> u64 {
        let (digest, _) = digest(anonymous, numbers);
        let direct = &mut self.direct;
        *self.parts.keys.get_or((client.hash_value(), digest), || {
            direct.key(client, numbers, anonymous)
        })
    }
}

/// The renaming's digest for a part holding `numbers`, and whether it
/// leaves the part unchanged.
fn digest(r: &Renaming, numbers: &Numbers) -> (u64, bool) {
    let mut hasher = ahash::AHasher::default();
    let unchanged = r.digest(numbers, &mut hasher);
    (hasher.finish(), unchanged)
}

/// Values by a pair of hashes, in a direct-mapped table of `SIZE` slots
/// (a power of two): a new entry replaces the one in its slot, so the table
/// never grows or stops to clear, and recent entries (a state's siblings
/// share most parts) are the ones kept.
struct ByHash<V, const SIZE: usize> {
    slots: Vec<Option<((u64, u64), V)>>,
}

impl<V, const SIZE: usize> Default for ByHash<V, SIZE> {
    fn default() -> Self {
        ByHash { slots: Vec::new() }
    }
}

impl<V, const SIZE: usize> ByHash<V, SIZE> {
    fn get_or(&mut self, key: (u64, u64), compute: impl FnOnce() -> V) -> &V {
        if self.slots.is_empty() {
            self.slots.resize_with(SIZE, || None);
        }
        let mixed = (key.0 ^ key.1.rotate_left(23)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let slot = &mut self.slots[(mixed >> 32) as usize & (SIZE - 1)];
        if slot.as_ref().is_none_or(|(k, _)| *k != key) {
            *slot = Some((key, compute()));
        }
        &slot.as_ref().expect("filled above").1
    }
}

/// Renames the server in place.
pub(super) fn rename_server(server: &mut ModelServer, r: &mut Renaming) {
    match server {
        ModelServer::One(server) => server.rename(r),
        ModelServer::Ensemble(_) => unreachable!("refused on an ensemble (canonical_error)"),
    }
}

/// Renames a client and its inbox in place. `before` is the client as it
/// was (its replies are matched with the requests they answer there).
pub(super) fn rename_client<R: ModelRecipe + RenameRecipe>(
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

/// Queue tallies: the set of clients that took an item follows them.
pub(super) fn rename_items(
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
