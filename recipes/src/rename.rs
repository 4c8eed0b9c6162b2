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

mod numbers;
mod vocabulary;

pub use numbers::Numbers;
pub use vocabulary::{rename_reply, rename_result, rename_result_of, rename_stat_of};

use crate::recipe::{FencingToken, Recipe};
use crate::sequence::parse_sequence;
use crate::zk::{Path, SessionId, Zxid};
use numbers::Ranked;
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

#[cfg(test)]
mod tests;
