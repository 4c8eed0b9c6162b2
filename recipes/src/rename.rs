//! Renaming the identities in a state, consistently everywhere they occur:
//! what the model checker's client symmetry and rank abstraction are made of.
//!
//! Two kinds of identity are renamed:
//! - **clients**: client `c` becomes client `π(c)`. Its session ids
//!   (`first + 256 * generation + c`, the model's numbering), its unique id
//!   (`c + 1`, the one `ClientContext::unique_id` hands a recipe) and
//!   whatever the recipe derives from them (node names, node data) follow.
//! - **ranks**: zxids, and the sequence numbers of each parent's children,
//!   are replaced by their rank among the values the state holds (zxid 0
//!   stays 0), so that two states that differ only in how far the counters
//!   have run are one state. This is exact for a recipe that only compares
//!   these numbers by order and equality.
//!
//! A [`Renaming`] is used twice on a state: first *collecting* (every
//! number it is shown is recorded and returned unchanged), then, after
//! [`Renaming::rank`], *applying*. Every type that holds an identity
//! implements [`Rename`] by passing each such field through the
//! renaming's methods; a recipe machine also says how its node names,
//! node data and fencing tokens are built ([`RenameRecipe`]).
//!
//! The renaming is a promise a recipe makes; the model checker tests it
//! (the canonical successors of a state commute with renaming): a recipe
//! that orders contenders by session id or name is not symmetric, and the
//! test says so.

use crate::recipe::{FencingToken, Recipe};
use crate::sequence::parse_sequence;
use crate::zk::{
    MultiOp, OpResult, Path, ReadOp, ReadResult, Reply, Request, SessionEvent, SessionId, Stat,
    WatchedEvent, ZkResult, Zxid,
};
use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Renames a node name (one path component) created under `parent`.
pub type NodeNames = fn(&mut Renaming, parent: &str, name: &str) -> String;

/// Renames the data of the node at `path`.
pub type NodeData = fn(&mut Renaming, path: &Path, data: &[u8]) -> Vec<u8>;

/// Sessions per client in the model's numbering (`first + 256 * g + c`).
const SESSION_STRIDE: i64 = 0x100;

/// A consistent renaming of clients, zxids and sequence numbers.
#[derive(Clone, Debug)]
pub struct Renaming {
    collecting: bool,
    /// Client `c` becomes `clients[c]` (shared: a renaming is cloned for
    /// every state the model checker renames).
    clients: Arc<[usize]>,
    first_session: i64,
    /// Replace zxids and sequence numbers by their ranks.
    ranks: bool,
    /// The zxids seen. Shared: renamings that differ only in their
    /// clients share ranks.
    zxids: Arc<Ranked<Zxid>>,
    /// Parent -> the sequence numbers seen.
    sequences: Arc<BTreeMap<String, Ranked<i32>>>,
    /// Children lists come sorted (the model's default child order): sort
    /// them again after renaming.
    sort_children: bool,
    /// Ranked without collecting: every number is its own rank
    /// ([`Renaming::rank_dense`]).
    dense: bool,
    names: NodeNames,
    data: NodeData,
}

/// The zxids and sequence numbers a value holds, as a collecting
/// [`Renaming`] sees them ([`Renaming::collected`]): what the rank
/// abstraction ranks. A model collects them once per part of a state and
/// merges them per state ([`Renaming::collect`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Numbers {
    /// Sorted, without repeats.
    zxids: Vec<Zxid>,
    /// By parent (sorted by parent); each parent's numbers sorted, without
    /// repeats.
    sequences: Vec<(String, Vec<i32>)>,
    /// `zxids` as a set of bits, for [`Numbers::are_dense`].
    zxid_bits: Bits,
    /// Each parent's sequence numbers as a set of bits, in the order of
    /// `sequences`.
    sequence_bits: Vec<Bits>,
}

impl Numbers {
    fn new(zxids: Vec<Zxid>, sequences: Vec<(String, Vec<i32>)>) -> Numbers {
        Numbers {
            zxid_bits: Bits::of(&zxids),
            sequence_bits: sequences
                .iter()
                .map(|(_, values)| Bits::of(values))
                .collect(),
            zxids,
            sequences,
        }
    }

    /// The bits of the sequence numbers under `parent`, if there are any.
    fn sequence_bits_of(&self, parent: &str) -> Option<&Bits> {
        let at = self.sequences.iter().position(|(p, _)| p == parent)?;
        Some(&self.sequence_bits[at])
    }

    /// True when the numbers of `parts` together are already their own
    /// ranks: the zxids, with 0, are 0, 1, 2, ... up to the highest, and so
    /// are each parent's sequence numbers. (Numbers from 256 on
    /// are answered `false`, which is always safe: they are then ranked.)
    /// Each part brings its numbers as sets of bits, so this is a few
    /// unions of words, whatever the parts hold.
    pub fn are_dense<P: Borrow<Numbers>>(parts: &[P]) -> bool {
        let mut zxids = Bits::default();
        for part in parts {
            zxids.union(&part.borrow().zxid_bits);
        }
        if !zxids.is_dense() {
            return false;
        }
        // Each parent once, at the first part that has it.
        parts.iter().enumerate().all(|(at, part)| {
            let part = part.borrow();
            part.sequences
                .iter()
                .zip(&part.sequence_bits)
                .all(|((parent, _), bits)| {
                    parent_is_dense(parent, bits, &parts[..at], &parts[at + 1..])
                })
        })
    }
}

/// True when `parent`'s sequence numbers are dense over all parts: `bits`
/// from the first part that has the parent, `earlier` and `later` the
/// parts before and after it (judged already when an earlier part has it).
fn parent_is_dense<P: Borrow<Numbers>>(
    parent: &str,
    bits: &Bits,
    earlier: &[P],
    later: &[P],
) -> bool {
    if earlier
        .iter()
        .any(|part| part.borrow().sequence_bits_of(parent).is_some())
    {
        return true;
    }
    let mut union = bits.clone();
    for part in later {
        if let Some(bits) = part.borrow().sequence_bits_of(parent) {
            union.union(bits);
        }
    }
    union.is_dense()
}

/// A set of numbers below [`DENSE_BITS`], or the mark that a number was
/// outside them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Bits {
    words: [u64; DENSE_BITS / 64],
    out_of_range: bool,
}

impl Bits {
    /// The set of `values` (below 0 or from [`DENSE_BITS`] on: out of range).
    fn of<T: Copy>(values: &[T]) -> Bits
    where
        u64: TryFrom<T>,
    {
        let mut bits = Bits::default();
        for value in values {
            match u64::try_from(*value)
                .ok()
                .filter(|at| *at < DENSE_BITS as u64)
            {
                Some(at) => bits.words[at as usize / 64] |= 1 << (at % 64),
                None => bits.out_of_range = true,
            }
        }
        bits
    }

    fn union(&mut self, other: &Bits) {
        for (word, other) in self.words.iter_mut().zip(&other.words) {
            *word |= other;
        }
        self.out_of_range |= other.out_of_range;
    }

    /// True when the set, with 0, is 0, 1, 2, ... up to its highest.
    fn is_dense(&self) -> bool {
        if self.out_of_range {
            return false;
        }
        let mut words = self.words;
        words[0] |= 1;
        let top = words.iter().rposition(|word| *word != 0).expect("0 is in");
        let highest = top as u32 * 64 + 63 - words[top].leading_zeros();
        let count: u32 = words[..=top].iter().map(|word| word.count_ones()).sum();
        count == highest + 1
    }
}

/// The values [`Numbers::are_dense`] can judge dense (larger ones are ranked).
const DENSE_BITS: usize = 256;

/// Numbers seen while collecting (in any order, repeated), then sorted
/// once: a number's rank is its place counted from 0's (0 is always there,
/// and stays 0).
#[derive(Clone, Debug, Default)]
struct Ranked<T> {
    values: Vec<T>,
    /// Where 0 is, once ranked.
    zero: usize,
}

impl<T: Copy + Ord + Default + TryFrom<i64>> Ranked<T> {
    fn rank(&mut self) {
        self.values.push(T::default());
        self.values.sort_unstable();
        self.values.dedup();
        self.zero = self
            .values
            .binary_search(&T::default())
            .expect("0 was pushed");
    }

    fn rank_of(&self, value: T) -> Option<T> {
        let at = self.values.binary_search(&value).ok()?;
        T::try_from(at as i64 - self.zero as i64).ok()
    }

    /// Every value is its own rank: the values are 0, 1, 2, ... (ranked).
    fn is_identity(&self) -> bool {
        self.zero == 0
            && self
                .values
                .iter()
                .enumerate()
                .all(|(at, value)| T::try_from(at as i64).is_ok_and(|at| at == *value))
    }

    /// The values seen, sorted, each once.
    fn seen(&self) -> Vec<T> {
        let mut seen = self.values.clone();
        seen.sort_unstable();
        seen.dedup();
        seen
    }
}

/// A value that holds identities a [`Renaming`] renames.
pub trait Rename {
    fn rename(&mut self, r: &mut Renaming);
}

/// A recipe machine that declares its renaming: its own state (through
/// [`Rename`]), how its node names and data carry identities, and what its
/// fencing tokens are made of.
pub trait RenameRecipe: Recipe + Rename {
    /// Clients may be renamed for one another: the recipe treats client
    /// ids, session ids and the names made of them as names only, never
    /// ordering or choosing by them. A recipe that orders contenders by
    /// session id says `false` (ranks still apply).
    const SYMMETRIC: bool = true;

    /// The name of a node this recipe creates under `parent`, renamed. The
    /// default: a trailing ZooKeeper sequence suffix is ranked, the rest kept.
    fn rename_node(r: &mut Renaming, parent: &str, name: &str) -> String {
        r.sequence_suffix(parent, name, name.len().saturating_sub(10))
    }

    /// A node's data, renamed. The default keeps it.
    fn rename_data(_r: &mut Renaming, _path: &Path, data: &[u8]) -> Vec<u8> {
        data.to_vec()
    }

    /// A fencing token this recipe granted, renamed. The default: a zxid.
    fn rename_token(&self, r: &mut Renaming, token: FencingToken) -> FencingToken {
        FencingToken(r.zxid(token.0))
    }
}

impl Renaming {
    /// A renaming in its collecting phase: `clients[c]` is client `c`'s new
    /// index (a permutation), `first_session` client 0's first session id;
    /// `ranks` turns the rank abstraction on. Node names and data are
    /// renamed as recipe `R` builds them.
    pub fn new<R: RenameRecipe>(
        clients: Vec<usize>,
        first_session: SessionId,
        ranks: bool,
        sort_children: bool,
    ) -> Renaming {
        debug_assert!(is_permutation(&clients), "{clients:?} is not a permutation");
        Renaming {
            collecting: true,
            clients: clients.into(),
            first_session: first_session.0,
            ranks,
            zxids: Arc::default(),
            sequences: Arc::default(),
            sort_children,
            dense: false,
            names: R::rename_node,
            data: R::rename_data,
        }
    }

    /// The same renaming (in the same phase, with the same ranks) with
    /// another client permutation.
    pub fn with_clients(&self, clients: Vec<usize>) -> Renaming {
        debug_assert!(is_permutation(&clients), "{clients:?} is not a permutation");
        Renaming {
            clients: clients.into(),
            ..self.clone()
        }
    }

    /// The same renaming with every client renamed to client 0: not a
    /// permutation, only for keys that no permutation may change.
    pub fn anonymous(&self) -> Renaming {
        Renaming {
            clients: vec![0; self.clients.len()].into(),
            ..self.clone()
        }
    }

    /// True while numbers are only being collected.
    pub fn is_collecting(&self) -> bool {
        self.collecting
    }

    /// Ends the collecting phase: each zxid becomes its rank (0 stays 0),
    /// each sequence number its rank among its parent's.
    pub fn rank(&mut self) {
        self.collecting = false;
        if !self.ranks {
            return;
        }
        Arc::make_mut(&mut self.zxids).rank();
        for ranks in Arc::make_mut(&mut self.sequences).values_mut() {
            // A counter that moved stays above 0 (a container that had a
            // child is reapable only then): 0 is ranked too.
            ranks.rank();
        }
    }

    /// Ends the collecting phase without collecting anything, for numbers
    /// that are already their own ranks: the numbers of every part the
    /// renaming will see, [`Numbers::are_dense`] together. Cheaper than
    /// collecting them and [`Renaming::rank`], with the same outcome.
    pub fn rank_dense(&mut self) {
        debug_assert!(self.collecting && self.zxids.values.is_empty());
        self.collecting = false;
        self.dense = true;
    }

    /// True when every number is its own rank (always, without ranks):
    /// with [`Renaming::keeps_clients`], the renaming changes nothing.
    pub fn ranks_are_identity(&self) -> bool {
        debug_assert!(!self.collecting, "ranks are read from a ranked renaming");
        !self.ranks
            || self.dense
            || (self.zxids.is_identity() && self.sequences.values().all(Ranked::is_identity))
    }

    /// The new index of client `client`.
    pub fn client(&self, client: usize) -> usize {
        self.clients.get(client).copied().unwrap_or(client)
    }

    /// True when no client changes its index.
    pub fn keeps_clients(&self) -> bool {
        self.clients.iter().enumerate().all(|(c, new)| c == *new)
    }

    /// A session id, renamed with its client (ids outside the model's
    /// numbering stay).
    pub fn session(&self, session: SessionId) -> SessionId {
        let offset = session.0.wrapping_sub(self.first_session);
        if session.0 < self.first_session || offset / SESSION_STRIDE >= SESSION_STRIDE {
            return session;
        }
        let (generation, client) = (offset / SESSION_STRIDE, offset % SESSION_STRIDE);
        match self.clients.get(client as usize) {
            Some(new) => SessionId(self.first_session + generation * SESSION_STRIDE + *new as i64),
            None => session,
        }
    }

    /// A raw session id (a `Stat`'s `ephemeral_owner`; 0 for none).
    pub fn session_raw(&self, session: i64) -> i64 {
        if session == 0 {
            0
        } else {
            self.session(SessionId(session)).0
        }
    }

    /// A unique id `c + 1` handed to client `c` at construction, renamed.
    pub fn unique_id(&self, id: u64) -> u64 {
        match id.checked_sub(1).and_then(|c| self.clients.get(c as usize)) {
            Some(new) => *new as u64 + 1,
            None => id,
        }
    }

    /// A zxid, as its rank.
    pub fn zxid(&mut self, zxid: Zxid) -> Zxid {
        if !self.ranks {
            return zxid;
        }
        if self.collecting {
            Arc::make_mut(&mut self.zxids).values.push(zxid);
            return zxid;
        }
        self.zxid_rank(zxid)
            .unwrap_or_else(|| panic!("zxid {zxid} was not collected"))
    }

    /// The rank of a collected zxid (ranked phase).
    fn zxid_rank(&self, zxid: Zxid) -> Option<Zxid> {
        match self.dense {
            true => Some(zxid),
            false => self.zxids.rank_of(zxid),
        }
    }

    /// The rank of a collected sequence number of a child of `parent`
    /// (ranked phase).
    fn sequence_rank(&self, parent: &str, sequence: i32) -> Option<i32> {
        match self.dense {
            true => Some(sequence),
            false => self.sequences.get(parent)?.rank_of(sequence),
        }
    }

    /// A sequence number of a child of `parent`, as its rank.
    pub fn sequence(&mut self, parent: &(impl AsRef<str> + ?Sized), sequence: i32) -> i32 {
        let parent = parent.as_ref();
        if !self.ranks {
            return sequence;
        }
        if self.collecting {
            let sequences = Arc::make_mut(&mut self.sequences);
            let seen = match sequences.get_mut(parent) {
                Some(seen) => seen,
                None => sequences.entry(parent.to_owned()).or_default(),
            };
            seen.values.push(sequence);
            return sequence;
        }
        self.sequence_rank(parent, sequence)
            .unwrap_or_else(|| panic!("sequence {sequence} of {parent} was not collected"))
    }

    /// True when sequence numbers are replaced by ranks (in either phase).
    pub fn ranks_sequences(&self) -> bool {
        self.ranks
    }

    /// `name` with the sequence suffix that starts at byte `at` ranked (the
    /// name is kept if no sequence starts there).
    pub fn sequence_suffix(
        &mut self,
        parent: &(impl AsRef<str> + ?Sized),
        name: &str,
        at: usize,
    ) -> String {
        if !self.ranks {
            return name.to_owned();
        }
        match name.get(at..).and_then(parse_sequence) {
            Some(sequence) if name.is_char_boundary(at) => {
                let ranked = self.sequence(parent, sequence);
                if self.collecting || ranked == sequence {
                    return name.to_owned();
                }
                let mut renamed = String::with_capacity(at + 10);
                renamed.push_str(&name[..at]);
                push_sequence(&mut renamed, ranked);
                renamed
            }
            _ => name.to_owned(),
        }
    }

    /// The numbers collected so far (collecting phase).
    pub fn collected(&self) -> Numbers {
        debug_assert!(self.collecting, "numbers are collected before ranking");
        Numbers::new(
            self.zxids.seen(),
            self.sequences
                .iter()
                .map(|(parent, seen)| (parent.clone(), seen.seen()))
                .collect(),
        )
    }

    /// Adds numbers collected from another value (collecting phase), as if
    /// that value had been renamed here.
    pub fn collect(&mut self, numbers: &Numbers) {
        debug_assert!(self.collecting, "numbers are collected before ranking");
        if !numbers.zxids.is_empty() {
            let zxids = Arc::make_mut(&mut self.zxids);
            zxids.values.extend_from_slice(&numbers.zxids);
        }
        if numbers.sequences.is_empty() {
            return;
        }
        let sequences = Arc::make_mut(&mut self.sequences);
        for (parent, values) in &numbers.sequences {
            let seen = match sequences.get_mut(parent.as_str()) {
                Some(seen) => seen,
                None => sequences.entry(parent.clone()).or_default(),
            };
            seen.values.extend_from_slice(values);
        }
    }

    /// Feeds `hasher` everything that decides what this renaming (ranked)
    /// does to a value holding `numbers`: the client permutation, the
    /// numbering, and the rank of each of those numbers. Two renamings with
    /// the same digest rename such a value alike. Returns true when the
    /// renaming leaves such a value unchanged (no client moves, every
    /// number is its own rank).
    pub fn digest(&self, numbers: &Numbers, hasher: &mut impl Hasher) -> bool {
        debug_assert!(!self.collecting, "a digest is of a ranked renaming");
        self.clients.hash(hasher);
        (self.first_session, self.ranks, self.sort_children).hash(hasher);
        let mut unchanged = self.keeps_clients();
        if !self.ranks {
            return unchanged;
        }
        for zxid in &numbers.zxids {
            let rank = self.zxid_rank(*zxid).expect("a collected zxid");
            hasher.write_i64(rank);
            unchanged &= rank == *zxid;
        }
        for (parent, values) in &numbers.sequences {
            for value in values {
                let rank = self
                    .sequence_rank(parent, *value)
                    .expect("a collected sequence number");
                hasher.write_i32(rank);
                unchanged &= rank == *value;
            }
        }
        unchanged
    }

    /// The lowest rank among the sequence numbers in `numbers` (of any
    /// parent), `None` when they hold none or nothing is ranked. No client
    /// renaming changes it: a sort key that keeps clients in place while
    /// their sequence numbers do (see the model's canonical form).
    pub fn lowest_sequence_rank(&self, numbers: &Numbers) -> Option<i32> {
        debug_assert!(!self.collecting, "ranks are read from a ranked renaming");
        if !self.ranks {
            return None;
        }
        numbers
            .sequences
            .iter()
            .filter_map(|(parent, values)| {
                let lowest = *values.first()?;
                self.sequence_rank(parent, lowest)
            })
            .min()
    }

    /// A node name under `parent`, renamed as the recipe builds names.
    pub fn name(&mut self, parent: &(impl AsRef<str> + ?Sized), name: &str) -> String {
        (self.names)(self, parent.as_ref(), name)
    }

    /// A path, renamed component by component.
    pub fn path(&mut self, path: &Path) -> Path {
        let text = path.as_str();
        let mut renamed = String::with_capacity(text.len());
        let mut start = 1;
        while start < text.len() {
            let end = text[start..].find('/').map_or(text.len(), |at| start + at);
            let parent = match start {
                1 => "/",
                _ => &text[..start - 1],
            };
            renamed.push('/');
            renamed.push_str(&self.name(parent, &text[start..end]));
            start = end + 1;
        }
        if path.ends_with_slash() && !path.is_root() {
            renamed.push('/');
        }
        if renamed.is_empty() {
            return path.clone();
        }
        Path::new_unchecked(renamed)
    }

    /// The data of the node at `path`, renamed.
    pub fn data(&mut self, path: &Path, data: &[u8]) -> Vec<u8> {
        (self.data)(self, path, data)
    }

    /// Children of `parent` as a getChildren reply lists them.
    pub fn children(&mut self, parent: &Path, children: &[String]) -> Vec<String> {
        let parent = parent.as_str();
        let mut renamed: Vec<String> = children.iter().map(|c| self.name(parent, c)).collect();
        if self.sort_children && !self.collecting {
            renamed.sort();
        }
        renamed
    }
}

/// Appends `value` in decimal (what `format!("{value}")` writes).
pub fn push_decimal(out: &mut String, value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[at..]).expect("ASCII digits"));
}

/// Appends a sequence number as ZooKeeper writes it (`%010d`).
pub fn push_sequence(out: &mut String, sequence: i32) {
    if sequence < 0 {
        out.push_str(&format!("{sequence:010}"));
        return;
    }
    let start = out.len();
    push_decimal(out, sequence as u64);
    let width = out.len() - start;
    if width < 10 {
        out.insert_str(start, &"0000000000"[..10 - width]);
    }
}

fn is_permutation(clients: &[usize]) -> bool {
    let mut seen = vec![false; clients.len()];
    clients
        .iter()
        .all(|c| *c < seen.len() && !std::mem::replace(&mut seen[*c], true))
}

impl Rename for Path {
    fn rename(&mut self, r: &mut Renaming) {
        *self = r.path(self);
    }
}

impl Rename for SessionId {
    fn rename(&mut self, r: &mut Renaming) {
        *self = r.session(*self);
    }
}

impl<T: Rename> Rename for Option<T> {
    fn rename(&mut self, r: &mut Renaming) {
        if let Some(value) = self {
            value.rename(r);
        }
    }
}

impl Rename for Stat {
    fn rename(&mut self, r: &mut Renaming) {
        self.czxid = r.zxid(self.czxid);
        self.mzxid = r.zxid(self.mzxid);
        self.pzxid = r.zxid(self.pzxid);
        self.ephemeral_owner = r.session_raw(self.ephemeral_owner);
    }
}

impl Rename for Request {
    fn rename(&mut self, r: &mut Renaming) {
        match self {
            Request::Create { path, data, .. } | Request::SetData { path, data, .. } => {
                *data = r.data(path, data);
                path.rename(r);
            }
            Request::Delete { path, .. }
            | Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::GetChildren { path, .. }
            | Request::GetChildren2 { path, .. }
            | Request::Check { path, .. }
            | Request::Sync { path }
            | Request::AddWatch { path, .. }
            | Request::GetAllChildrenNumber { path }
            | Request::GetAcl { path }
            | Request::SetAcl { path, .. } => path.rename(r),
            // The session's own identities name no node.
            Request::AddAuth { .. } | Request::WhoAmI => {}
            // A prefix of text, not a node: renamed as a path would be.
            Request::GetEphemerals { prefix } => prefix.rename(r),
            Request::Multi(ops) => ops.iter_mut().for_each(|op| op.rename(r)),
            Request::MultiRead(ops) => ops.iter_mut().for_each(|op| match op {
                ReadOp::GetData { path } | ReadOp::GetChildren { path } => path.rename(r),
            }),
        }
    }
}

impl Rename for MultiOp {
    fn rename(&mut self, r: &mut Renaming) {
        match self {
            MultiOp::Create { path, data, .. } | MultiOp::SetData { path, data, .. } => {
                *data = r.data(path, data);
                path.rename(r);
            }
            MultiOp::Delete { path, .. } | MultiOp::Check { path, .. } => path.rename(r),
        }
    }
}

/// A reply to `request` (children lists need the parent they list).
pub fn rename_reply(reply: &mut Reply, request: Option<&Path>, r: &mut Renaming) {
    match reply {
        Reply::Created { path, stat } => {
            rename_stat_of(stat, Some(path), r);
            path.rename(r);
        }
        Reply::Exists(stat) => {
            if let Some(stat) = stat {
                rename_stat_of(stat, request, r);
            }
        }
        Reply::Data { data, stat } => {
            if let Some(path) = request {
                *data = r.data(path, data);
            }
            rename_stat_of(stat, request, r);
        }
        Reply::DataSet(stat) => rename_stat_of(stat, request, r),
        Reply::Children(children) => {
            let parent = request.expect("a children reply answers a path");
            *children = r.children(parent, children);
        }
        Reply::Children2 { children, stat } => {
            let parent = request.expect("a children reply answers a path");
            *children = r.children(parent, children);
            rename_stat_of(stat, request, r);
        }
        Reply::Multi(results) => results.iter_mut().for_each(|result| result.rename(r)),
        Reply::Synced { path } => path.rename(r),
        Reply::Acl { stat, .. } | Reply::AclSet(stat) => rename_stat_of(stat, request, r),
        Reply::Deleted
        | Reply::Checked
        | Reply::WatchAdded
        | Reply::AllChildrenNumber(_)
        | Reply::AuthAdded
        | Reply::AuthIds(_) => {}
        Reply::Ephemerals(paths) => paths.iter_mut().for_each(|path| path.rename(r)),
        // Data and children need each read's path: rename_result_of renames
        // them with the request; without it only the stats.
        Reply::MultiRead(results) => results.iter_mut().for_each(|result| {
            if let ReadResult::Data { stat, .. } = result {
                rename_stat_of(stat, None, r);
            }
        }),
    }
}

/// The stat of the node at `path` (`None`: unknown), renamed. Its
/// `cversion` is made of the node's sequence counter (`2 * counter -
/// children`, as the server computes it), which ranks rename: the counter
/// it was made of is ranked with the node's other sequence numbers, so a
/// stat in flight agrees with the ones the renamed tree gives.
pub fn rename_stat_of(stat: &mut Stat, path: Option<&Path>, r: &mut Renaming) {
    stat.rename(r);
    let Some(path) = path.filter(|_| r.ranks_sequences()) else {
        return;
    };
    let doubled = i64::from(stat.cversion) + i64::from(stat.num_children);
    if doubled <= 0 || doubled % 2 != 0 || doubled / 2 > i64::from(i32::MAX) {
        return;
    }
    let counter = r.sequence(path, (doubled / 2) as i32);
    stat.cversion = counter.wrapping_mul(2).wrapping_sub(stat.num_children);
}

/// A result of a request to `path`.
pub fn rename_result(result: &mut ZkResult, path: Option<&Path>, r: &mut Renaming) {
    if let Ok(reply) = result {
        rename_reply(reply, path, r);
    }
}

/// A result of `request` (`None`: unknown): as [`rename_result`], and the
/// results of a multi each with the path of its op, so that a `setData`'s
/// stat inside a multi is renamed as [`rename_stat_of`] renames it.
pub fn rename_result_of(result: &mut ZkResult, request: Option<&Request>, r: &mut Renaming) {
    if let (Ok(Reply::MultiRead(results)), Some(Request::MultiRead(ops))) = (&mut *result, request)
    {
        for (result, op) in results.iter_mut().zip(ops) {
            rename_read_result(result, op, r);
        }
        return;
    }
    let (Ok(Reply::Multi(results)), Some(Request::Multi(ops))) = (&mut *result, request) else {
        return rename_result(result, request.and_then(Request::path), r);
    };
    for (result, op) in results.iter_mut().zip(ops) {
        match (result, op) {
            (OpResult::DataSet(stat), MultiOp::SetData { path, .. }) => {
                rename_stat_of(stat, Some(path), r)
            }
            (OpResult::Created { path, stat }, _) => {
                rename_stat_of(stat, Some(path), r);
                path.rename(r);
            }
            (result, _) => result.rename(r),
        }
    }
}

/// The result of one read of a multi-read, renamed as the reply of the same
/// read alone would be.
fn rename_read_result(result: &mut ReadResult, op: &ReadOp, r: &mut Renaming) {
    match result {
        ReadResult::Data { data, stat } => {
            *data = r.data(op.path(), data);
            rename_stat_of(stat, Some(op.path()), r);
        }
        ReadResult::Children(children) => *children = r.children(op.path(), children),
        ReadResult::Error(_) => {}
    }
}

impl Rename for OpResult {
    fn rename(&mut self, r: &mut Renaming) {
        match self {
            OpResult::Created { path, stat } => {
                path.rename(r);
                stat.rename(r);
            }
            OpResult::DataSet(stat) => stat.rename(r),
            OpResult::Deleted | OpResult::Checked => {}
        }
    }
}

impl Rename for WatchedEvent {
    fn rename(&mut self, r: &mut Renaming) {
        self.path.rename(r);
    }
}

impl Rename for SessionEvent {
    fn rename(&mut self, r: &mut Renaming) {
        if let SessionEvent::Connected { session_id } = self {
            session_id.rename(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    struct Plain;
    impl Recipe for Plain {
        type Call = ();
        type Outcome = ();
        fn handle(&mut self, _: crate::Input<()>, _: &mut crate::Outbox<()>) {}
    }
    impl Rename for Plain {
        fn rename(&mut self, _: &mut Renaming) {}
    }
    impl RenameRecipe for Plain {}

    fn path(p: &str) -> Path {
        Path::new(p).unwrap()
    }

    #[test]
    fn sessions_and_unique_ids_follow_their_client() {
        let r = Renaming::new::<Plain>(vec![2, 0, 1], SessionId(257), false, true);
        assert_eq!(r.session(SessionId(257)), SessionId(259));
        assert_eq!(r.session(SessionId(257 + 256 + 1)), SessionId(257 + 256));
        assert_eq!(r.session(SessionId(1)), SessionId(1));
        assert_eq!(r.session(SessionId(260)), SessionId(260));
        assert_eq!(r.unique_id(1), 3);
        assert_eq!(r.unique_id(3), 2);
        assert_eq!(r.unique_id(0), 0);
    }

    #[test]
    fn numbers_are_written_as_format_writes_them() {
        for value in [0u64, 7, 10, 257, u64::MAX] {
            let mut out = String::from("x");
            push_decimal(&mut out, value);
            assert_eq!(out, format!("x{value}"));
        }
        for sequence in [0, 3, 1234567890, i32::MAX, -1, i32::MIN] {
            let mut out = String::new();
            push_sequence(&mut out, sequence);
            assert_eq!(out, format!("{sequence:010}"));
        }
    }

    #[test]
    fn zxids_and_sequences_become_ranks() {
        let mut r = Renaming::new::<Plain>(vec![0], SessionId(257), true, true);
        let dir = path("/locks");
        for z in [9, 4, 12] {
            r.zxid(z);
        }
        assert_eq!(
            r.path(&path("/locks/x-0000000007")),
            path("/locks/x-0000000007")
        );
        r.sequence(&dir, 3);
        r.rank();
        assert_eq!((r.zxid(0), r.zxid(4), r.zxid(9), r.zxid(12)), (0, 1, 2, 3));
        // Each parent's ranks count from 0, which stays 0.
        assert_eq!(
            r.path(&path("/locks/x-0000000007")),
            path("/locks/x-0000000002")
        );
        assert_eq!(r.sequence(&dir, 3), 1);
        assert_eq!(r.path(&path("/locks")), path("/locks"));
    }

    fn numbers(zxids: &[Zxid], sequences: &[(&str, &[i32])]) -> Numbers {
        Numbers::new(
            zxids.to_vec(),
            sequences
                .iter()
                .map(|(parent, values)| (parent.to_string(), values.to_vec()))
                .collect(),
        )
    }

    /// Whether `parts` are dense, checked against collecting and ranking
    /// them: dense exactly when every number is its own rank.
    fn dense_as_ranked(parts: &[&Numbers]) -> bool {
        let dense = Numbers::are_dense(parts);
        let mut r = Renaming::new::<Plain>(vec![0], SessionId(257), true, true);
        for part in parts {
            r.collect(part);
        }
        r.rank();
        let in_range = parts.iter().all(|part| {
            part.zxids.iter().all(|z| *z < DENSE_BITS as i64)
                && part
                    .sequences
                    .iter()
                    .flat_map(|(_, v)| v)
                    .all(|v| *v < DENSE_BITS as i32)
        });
        if in_range {
            assert_eq!(dense, r.ranks_are_identity(), "{parts:?}");
        }
        dense
    }

    #[test]
    fn dense_numbers_are_their_own_ranks() {
        let a = numbers(&[1, 3], &[("/q", &[0, 2])]);
        let b = numbers(&[2], &[("/l", &[1]), ("/q", &[1])]);
        assert!(dense_as_ranked(&[&a, &b]));
        assert!(dense_as_ranked(&[]));
        // A gap: 3 would rank 2.
        assert!(!dense_as_ranked(&[&a]));
        // Each parent counts on its own.
        let c = numbers(&[1, 2], &[("/l", &[3])]);
        assert!(!dense_as_ranked(&[&a, &b, &c]));
        // Below 0 (0 ranks above it) and past what the bits hold.
        assert!(!dense_as_ranked(&[&numbers(&[-1], &[])]));
        let far: Vec<Zxid> = (1..=DENSE_BITS as i64).collect();
        assert!(!dense_as_ranked(&[&numbers(&far, &[])]));
        let within: Vec<Zxid> = (1..DENSE_BITS as i64).collect();
        assert!(dense_as_ranked(&[&numbers(&within, &[])]));
    }

    #[test]
    fn a_dense_renaming_keeps_every_number() {
        let mut r = Renaming::new::<Plain>(vec![0], SessionId(257), true, true);
        r.rank_dense();
        assert!(r.ranks_are_identity());
        assert_eq!((r.zxid(0), r.zxid(5)), (0, 5));
        assert_eq!(
            r.path(&path("/locks/x-0000000007")),
            path("/locks/x-0000000007")
        );
        let mut digested = std::collections::hash_map::DefaultHasher::new();
        assert!(r.digest(&numbers(&[5], &[("/locks", &[7])]), &mut digested));
    }
}
