//! The fixed queue: every item is delivered exactly once, in FIFO order,
//! under every fault of the fault model (connection loss with the request
//! applied or not, reconnect, session expiry noticed late, spurious wakeups).
//!
//! Protocol (paths for a queue `/q`, a client with unique id `u`):
//! - Every write that must not happen twice goes in one multi with the
//!   creation of a receipt, `/q-receipts/p-<u>` (producer) or
//!   `/q-receipts/c-<u>` (consumer, holding the claimed item's name). After
//!   a ConnectionLoss the client syncs, then asks `exists(receipt)`: present
//!   means the write was applied, absent means it was not (a multi is all or
//!   nothing). The sync matters on an ensemble: with the reply lost, the
//!   client may reconnect to a server that has not applied the write yet.
//!   The receipt is deleted before the call is answered, so a receipt never
//!   outlives its call and none is left behind. (Looking for the item
//!   itself would not do: a consumer may take it before the producer looks.)
//! - offer: multi[create `/q/qn-` PERSISTENT_SEQUENTIAL, create `p-<u>`],
//!   then delete `p-<u>` and answer `Offered`.
//! - take/poll: getChildren (take: with a watch), order by the sequence
//!   suffix, then for each item in order: getData, multi[delete item, create
//!   `c-<u>`]; NoNode on the item means another consumer has it: try the
//!   next one. After the claim, delete `c-<u>` and answer `Item(data)`.
//!   An empty take waits for a child event (state events and stale watches
//!   are ignored; after a reconnect it lists again, to be safe).
//! - The queue directory (persistent) is created at the first connection
//!   and again when found missing. The receipts directory is a container the
//!   server reaps once it is empty again; it is only ever created inside the
//!   multi that writes a receipt into it (after a write found it missing),
//!   so it always gets a child and never outlives its use.
//! - Nothing is tied to the session (items and receipts are persistent), so
//!   after the session expires a running call is not failed: it waits for the
//!   driver's new session and resumes, checking its receipt first.

use super::naming::fifo_order;
use super::{escaped, QueueCall, QueueFailure, QueueOutcome};
use crate::zk::Acls;
use crate::zk::{
    CreateMode, EventType, MultiOp, Path, Reply, Request, SessionEvent, SessionId, ZkError,
    ZkResult, ANY_VERSION,
};
use crate::{Input, Outbox, Recipe, Tag};

const CREATE_DIR: Tag = Tag(1);
const OFFER_WRITE: Tag = Tag(3);
const OFFER_VERIFY: Tag = Tag(4);
const OFFER_CLEANUP: Tag = Tag(5);
const LIST: Tag = Tag(6);
const READ: Tag = Tag(7);
const CLAIM: Tag = Tag(8);
const CLAIM_VERIFY: Tag = Tag(9);
const CLAIM_CLEANUP: Tag = Tag(10);
const OFFER_SYNC: Tag = Tag(11);
const CLAIM_SYNC: Tag = Tag(12);

/// The name prefix of queue items; the server appends the sequence number.
pub const ITEM_PREFIX: &str = "qn-";

/// The exactly-once FIFO queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixedQueue {
    dir: Path,
    receipts_dir: Path,
    producer_receipt: Path,
    consumer_receipt: Path,
    session: Option<SessionId>,
    /// The session expired: send nothing until a new session connects.
    expired: bool,
    /// The tag of the one request awaiting its reply.
    outstanding: Option<Tag>,
    setup: Setup,
    /// The receipts container was found missing: the next receipt multi
    /// creates it first.
    receipts_dir_missing: bool,
    /// A child event came while a blocking listing was in flight (it
    /// overtook the listing's reply): an empty listing may predate the
    /// change, and the event used up the watch, so list again.
    changed_while_listing: bool,
    phase: Phase,
}

/// Whether the queue directory must be created before the phase can go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Setup {
    NeedDir,
    Ready,
}

/// Which part of a receipt multi failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MultiPart {
    /// Creating the receipts container.
    ReceiptsDir,
    /// The write itself (create or delete the item).
    Write,
    /// Creating the receipt.
    Receipt,
}

/// Where the running call is. Each phase but `Idle` and `Wait` has exactly
/// one request; resuming a phase (after a reconnect, a new session or a
/// directory created) means sending that request again.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    /// multi[create item, create producer receipt].
    OfferWrite(Vec<u8>),
    /// sync after the write's reply was lost, so the verify sees the write.
    OfferSync(Vec<u8>),
    /// exists(producer receipt) after the write's reply was lost.
    OfferVerify(Vec<u8>),
    /// delete(producer receipt); then `Offered`.
    OfferCleanup,
    /// getChildren(dir, watch = blocking): `blocking` is take vs poll.
    List {
        blocking: bool,
    },
    /// take: an empty queue; the child watch is armed.
    Wait,
    /// getData(head).
    Read(Cursor),
    /// multi[delete head, create consumer receipt] with the head's data.
    Claim(Cursor, Vec<u8>),
    /// sync after the claim's reply was lost, so the verify sees the claim.
    ClaimSync(Cursor, Vec<u8>),
    /// exists(consumer receipt) after the claim's reply was lost.
    ClaimVerify(Cursor, Vec<u8>),
    /// delete(consumer receipt); then `Item(data)`.
    ClaimCleanup(Vec<u8>),
}

impl Phase {
    /// The phase to go on with when the last request's effect is unknown: a
    /// write is verified by its receipt after a sync (the next server may be
    /// behind the write), and a wait lists again (after an expiry the watch
    /// is gone); reads and cleanups are simply sent again.
    fn in_doubt(self) -> Phase {
        match self {
            Phase::OfferWrite(data) | Phase::OfferVerify(data) => Phase::OfferSync(data),
            Phase::Claim(cursor, data) | Phase::ClaimVerify(cursor, data) => {
                Phase::ClaimSync(cursor, data)
            }
            Phase::Wait => Phase::List { blocking: true },
            other => other,
        }
    }
}

/// A take's or poll's place in the items it listed, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Cursor {
    blocking: bool,
    /// Never empty; the first is the head being read or claimed.
    items: Vec<Path>,
}

impl Cursor {
    fn head(&self) -> &Path {
        &self.items[0]
    }
}

impl FixedQueue {
    /// A queue in `dir` whose receipts live in the sibling `<dir>-receipts`;
    /// `uid` must be unique among the clients of the queue.
    pub fn new(dir: Path, uid: u64) -> Self {
        let receipts_dir =
            Path::new(format!("{dir}-receipts")).expect("a valid path plus '-receipts' is valid");
        Self::with_receipts_dir(dir, receipts_dir, uid)
    }

    /// A queue in `dir` with its receipts in `receipts_dir`.
    pub fn with_receipts_dir(dir: Path, receipts_dir: Path, uid: u64) -> Self {
        let receipt = |kind: &str| {
            receipts_dir
                .child(&format!("{kind}-{uid}"))
                .expect("a decimal uid is a valid name")
        };
        FixedQueue {
            producer_receipt: receipt("p"),
            consumer_receipt: receipt("c"),
            dir,
            receipts_dir,
            session: None,
            expired: false,
            outstanding: None,
            setup: Setup::NeedDir,
            receipts_dir_missing: false,
            changed_while_listing: false,
            phase: Phase::Idle,
        }
    }

    pub fn receipts_dir(&self) -> &Path {
        &self.receipts_dir
    }

    /// True while no call is running.
    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Idle
    }

    /// True while a take waits for an item.
    pub fn is_waiting(&self) -> bool {
        self.phase == Phase::Wait
    }

    /// Sends the request of the current step, unless one is awaited already
    /// or the session is dead.
    fn drive(&mut self, out: &mut Outbox<QueueOutcome>) {
        if self.expired || self.outstanding.is_some() {
            return;
        }
        if let Some((tag, request)) = self.current_request() {
            self.outstanding = Some(tag);
            out.send(tag, request);
        }
    }

    /// The request of the current step: a missing queue directory first,
    /// then the phase's own request (none while idle or waiting).
    fn current_request(&self) -> Option<(Tag, Request)> {
        Some(match self.setup {
            Setup::NeedDir => (
                CREATE_DIR,
                create(&self.dir, Vec::new(), CreateMode::Persistent),
            ),
            Setup::Ready => return self.phase_request(),
        })
    }

    fn phase_request(&self) -> Option<(Tag, Request)> {
        Some(match &self.phase {
            Phase::Idle | Phase::Wait => return None,
            Phase::OfferWrite(data) => (OFFER_WRITE, self.offer_multi(data)),
            Phase::OfferSync(_) => (OFFER_SYNC, self.sync_receipts()),
            Phase::OfferVerify(_) => (OFFER_VERIFY, exists(&self.producer_receipt)),
            Phase::OfferCleanup => (OFFER_CLEANUP, delete(&self.producer_receipt)),
            Phase::List { blocking } => {
                let path = self.dir.clone();
                (
                    LIST,
                    Request::GetChildren {
                        path,
                        watch: *blocking,
                    },
                )
            }
            Phase::Read(cursor) => {
                let path = cursor.head().clone();
                (READ, Request::GetData { path, watch: false })
            }
            Phase::Claim(cursor, _) => (CLAIM, self.claim_multi(cursor.head())),
            Phase::ClaimSync(..) => (CLAIM_SYNC, self.sync_receipts()),
            Phase::ClaimVerify(..) => (CLAIM_VERIFY, exists(&self.consumer_receipt)),
            Phase::ClaimCleanup(_) => (CLAIM_CLEANUP, delete(&self.consumer_receipt)),
        })
    }

    /// Our server catches up with the leader before a receipt is looked for.
    fn sync_receipts(&self) -> Request {
        let path = self.receipts_dir.clone();
        Request::Sync { path }
    }

    /// Enqueue `data` and leave the producer receipt, all or nothing.
    fn offer_multi(&self, data: &[u8]) -> Request {
        let item = self
            .dir
            .child(ITEM_PREFIX)
            .expect("the prefix is a valid name");
        let mode = CreateMode::PersistentSequential;
        let write = MultiOp::Create {
            path: item,
            data: data.to_vec(),
            mode,
            acl: Acls::Open,
        };
        self.receipt_multi(write, receipt_op(&self.producer_receipt, Vec::new()))
    }

    /// Remove `head` and leave the consumer receipt naming it, all or nothing.
    fn claim_multi(&self, head: &Path) -> Request {
        let receipt_data = head.name().as_bytes().to_vec();
        let write = MultiOp::Delete {
            path: head.clone(),
            version: ANY_VERSION,
        };
        self.receipt_multi(write, receipt_op(&self.consumer_receipt, receipt_data))
    }

    /// multi[write, receipt], preceded by the creation of the receipts
    /// container when it was found missing: a container created here gets
    /// its child in the same transaction, so the server reaps it again.
    fn receipt_multi(&self, write: MultiOp, receipt: MultiOp) -> Request {
        let mut ops = Vec::with_capacity(3);
        if self.receipts_dir_missing {
            ops.push(MultiOp::Create {
                path: self.receipts_dir.clone(),
                data: Vec::new(),
                mode: CreateMode::Container,
                acl: Acls::Open,
            });
        }
        ops.extend([write, receipt]);
        Request::Multi(ops)
    }

    /// Which part of the last receipt multi failed, and why (None: not a
    /// multi failure).
    fn failed_part<'e>(&self, error: &'e ZkError) -> Option<(MultiPart, &'e ZkError)> {
        let (index, cause) = failed_op(error)?;
        let parts: &[MultiPart] = if self.receipts_dir_missing {
            &[MultiPart::ReceiptsDir, MultiPart::Write, MultiPart::Receipt]
        } else {
            &[MultiPart::Write, MultiPart::Receipt]
        };
        Some((*parts.get(index)?, cause))
    }

    /// The receipts container was found missing (`true`) or present after
    /// all (`false`): send the write again with or without its creation.
    fn retry_write(
        &mut self,
        receipts_dir_missing: bool,
        phase: Phase,
        out: &mut Outbox<QueueOutcome>,
    ) {
        self.receipts_dir_missing = receipts_dir_missing;
        self.enter(phase, out);
    }

    /// Moves to `phase` and sends its request.
    fn enter(&mut self, phase: Phase, out: &mut Outbox<QueueOutcome>) {
        self.phase = phase;
        self.drive(out);
    }

    /// Answers the running call and goes idle.
    fn finish(&mut self, outcome: QueueOutcome, out: &mut Outbox<QueueOutcome>) {
        self.phase = Phase::Idle;
        out.emit(outcome);
    }

    fn on_call(&mut self, call: QueueCall, out: &mut Outbox<QueueOutcome>) {
        if self.phase != Phase::Idle {
            return out.emit(QueueOutcome::Failed(QueueFailure::Busy));
        }
        let phase = match call {
            QueueCall::Offer(data) => Phase::OfferWrite(data),
            QueueCall::Take => Phase::List { blocking: true },
            QueueCall::Poll => Phase::List { blocking: false },
        };
        self.enter(phase, out);
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Outbox<QueueOutcome>) {
        match event {
            SessionEvent::Connected { session_id } if self.session.is_none() => {
                // First connection: create the directories right away (the
                // originals' constructors do the same).
                self.session = Some(session_id);
                self.drive(out);
            }
            SessionEvent::Connected { session_id }
                if self.expired || self.session != Some(session_id) =>
            {
                // A new session: resume the running call where it was.
                self.session = Some(session_id);
                self.expired = false;
                self.outstanding = None; // the old handle answers nothing more
                self.phase = std::mem::replace(&mut self.phase, Phase::Idle).in_doubt();
                self.drive(out);
            }
            SessionEvent::Connected { .. } => {
                // Reconnected into the same session: the watch was re-registered,
                // but listing again costs one read and needs no trust in that.
                if self.phase == Phase::Wait {
                    self.enter(Phase::List { blocking: true }, out);
                }
            }
            SessionEvent::Expired => self.on_expired(),
            SessionEvent::Disconnected => {} // in-flight requests answer ConnectionLoss
        }
    }

    /// The session is gone: wait for a new one; what was in flight is in doubt.
    fn on_expired(&mut self) {
        self.expired = true;
        self.outstanding = None;
        self.phase = std::mem::replace(&mut self.phase, Phase::Idle).in_doubt();
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        if self.expired {
            return; // the dead handle answering what was queued on it
        }
        if self.outstanding != Some(tag) {
            return; // not the reply this step awaits
        }
        self.outstanding = None;
        match result {
            Err(ZkError::SessionExpired) => self.on_expired(),
            // The request may or may not have been applied: the phase decides.
            Err(error) if error.is_connection_error() => self.on_connection_error(out),
            result if self.setup != Setup::Ready => self.on_setup_reply(result, out),
            result => self.on_phase_reply(result, out),
        }
    }

    /// Reads and cleanups are sent again; a write is verified by its receipt.
    fn on_connection_error(&mut self, out: &mut Outbox<QueueOutcome>) {
        let phase = match std::mem::replace(&mut self.phase, Phase::Idle) {
            phase if self.setup != Setup::Ready => phase,
            phase => phase.in_doubt(),
        };
        self.enter(phase, out);
    }

    fn on_setup_reply(&mut self, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        match result {
            Ok(_) | Err(ZkError::NodeExists) => {
                self.setup = Setup::Ready;
                self.drive(out);
            }
            // The directories are created again before the next call's request.
            Err(_) if self.phase == Phase::Idle => {}
            Err(error) => self.finish(QueueOutcome::keeper(&error), out),
        }
    }

    fn on_phase_reply(&mut self, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        match std::mem::replace(&mut self.phase, Phase::Idle) {
            // No request is outstanding in these phases: nothing to answer.
            phase @ (Phase::Idle | Phase::Wait) => self.phase = phase,
            Phase::OfferWrite(data) => self.on_offer_written(data, result, out),
            Phase::OfferSync(data) => match result {
                Ok(_) => self.enter(Phase::OfferVerify(data), out),
                other => self.finish(escaped(other), out),
            },
            Phase::OfferVerify(data) => match result {
                Ok(Reply::Exists(Some(_))) => self.enter(Phase::OfferCleanup, out),
                Ok(Reply::Exists(None)) => self.enter(Phase::OfferWrite(data), out),
                other => self.finish(escaped(other), out),
            },
            Phase::OfferCleanup => match result {
                Ok(_) | Err(ZkError::NoNode) => self.finish(QueueOutcome::Offered, out),
                other => self.finish(escaped(other), out),
            },
            Phase::List { blocking } => match result {
                Ok(
                    Reply::Children(names)
                    | Reply::Children2 {
                        children: names, ..
                    },
                ) => self.on_children(blocking, &names, out),
                Err(ZkError::NoNode) => self.need_dir(Phase::List { blocking }, out),
                other => self.finish(escaped(other), out),
            },
            Phase::Read(cursor) => match result {
                Ok(Reply::Data { data, .. }) => self.enter(Phase::Claim(cursor, data), out),
                // Another consumer has claimed it: try the next one.
                Err(ZkError::NoNode) => self.try_next(cursor, out),
                other => self.finish(escaped(other), out),
            },
            Phase::Claim(cursor, data) => self.on_claimed(cursor, data, result, out),
            Phase::ClaimSync(cursor, data) => match result {
                Ok(_) => self.enter(Phase::ClaimVerify(cursor, data), out),
                other => self.finish(escaped(other), out),
            },
            Phase::ClaimVerify(cursor, data) => match result {
                Ok(Reply::Exists(Some(_))) => self.enter(Phase::ClaimCleanup(data), out),
                Ok(Reply::Exists(None)) => self.enter(Phase::Claim(cursor, data), out),
                other => self.finish(escaped(other), out),
            },
            Phase::ClaimCleanup(data) => match result {
                Ok(_) | Err(ZkError::NoNode) => self.finish(QueueOutcome::Item(data), out),
                other => self.finish(escaped(other), out),
            },
        }
    }

    fn on_offer_written(
        &mut self,
        data: Vec<u8>,
        result: ZkResult,
        out: &mut Outbox<QueueOutcome>,
    ) {
        match result.as_ref().map_err(|error| self.failed_part(error)) {
            Ok(_) => self.enter(Phase::OfferCleanup, out),
            Err(Some((MultiPart::ReceiptsDir, ZkError::NodeExists))) => {
                self.retry_write(false, Phase::OfferWrite(data), out)
            }
            Err(Some((MultiPart::Write, ZkError::NoNode))) => {
                self.need_dir(Phase::OfferWrite(data), out)
            }
            Err(Some((MultiPart::Receipt, ZkError::NoNode))) => {
                self.retry_write(true, Phase::OfferWrite(data), out)
            }
            // Not applied (e.g. NodeExists when the sequence counter is
            // exhausted): the offer fails and nothing was enqueued.
            Err(_) => self.finish(escaped(result), out),
        }
    }

    fn on_claimed(
        &mut self,
        cursor: Cursor,
        data: Vec<u8>,
        result: ZkResult,
        out: &mut Outbox<QueueOutcome>,
    ) {
        match result.as_ref().map_err(|error| self.failed_part(error)) {
            Ok(_) => self.enter(Phase::ClaimCleanup(data), out),
            Err(Some((MultiPart::ReceiptsDir, ZkError::NodeExists))) => {
                self.retry_write(false, Phase::Claim(cursor, data), out)
            }
            // Another consumer has claimed it: try the next one.
            Err(Some((MultiPart::Write, ZkError::NoNode))) => self.try_next(cursor, out),
            Err(Some((MultiPart::Receipt, ZkError::NoNode))) => {
                self.retry_write(true, Phase::Claim(cursor, data), out)
            }
            Err(_) => self.finish(escaped(result), out),
        }
    }

    fn on_children(&mut self, blocking: bool, names: &[String], out: &mut Outbox<QueueOutcome>) {
        let items: Vec<Path> = fifo_order(names, ITEM_PREFIX)
            .iter()
            .filter_map(|name| self.dir.child(name).ok())
            .collect();
        let changed_while_listing = std::mem::take(&mut self.changed_while_listing);
        if !items.is_empty() {
            self.enter(Phase::Read(Cursor { blocking, items }), out);
        } else if blocking && changed_while_listing {
            self.enter(Phase::List { blocking }, out);
        } else if blocking {
            self.phase = Phase::Wait;
        } else {
            self.finish(QueueOutcome::Empty, out);
        }
    }

    /// The head is gone: try the next item, or list again after the last
    /// (seed 000: "we don't call getChildren again until we have tried the
    /// rest of the nodes in sequence order").
    fn try_next(&mut self, mut cursor: Cursor, out: &mut Outbox<QueueOutcome>) {
        cursor.items.remove(0);
        if cursor.items.is_empty() {
            self.enter(
                Phase::List {
                    blocking: cursor.blocking,
                },
                out,
            );
        } else {
            self.enter(Phase::Read(cursor), out);
        }
    }

    /// The queue directory is missing (deleted): create it, then resume
    /// `phase`.
    fn need_dir(&mut self, phase: Phase, out: &mut Outbox<QueueOutcome>) {
        self.setup = Setup::NeedDir;
        self.enter(phase, out);
    }

    fn on_watch(&mut self, event_type: EventType, out: &mut Outbox<QueueOutcome>) {
        // Node events only: a state event (type None) says nothing about the
        // children, and the session events handle reconnects and expiry.
        if event_type == EventType::None {
            return;
        }
        match self.phase {
            Phase::Wait => self.enter(Phase::List { blocking: true }, out),
            Phase::List { blocking: true } => self.changed_while_listing = true,
            _ => {}
        }
    }
}

/// The op index and error of a failed multi.
fn failed_op(error: &ZkError) -> Option<(usize, &ZkError)> {
    match error {
        ZkError::MultiFailed { index, error } => Some((*index, error.root_cause())),
        _ => None,
    }
}

impl Recipe for FixedQueue {
    type Call = QueueCall;
    type Outcome = QueueOutcome;

    fn handle(&mut self, input: Input<QueueCall>, out: &mut Outbox<QueueOutcome>) {
        match input {
            Input::Session(event) => self.on_session(event, out),
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            // All its watches are the default watcher's (`send`).
            Input::Watch(event) | Input::WatcherEvent { event, .. } => {
                self.on_watch(event.event_type, out)
            }
            Input::Timer(_) => {} // sets no timers
        }
    }
}

fn create(path: &Path, data: Vec<u8>, mode: CreateMode) -> Request {
    Request::Create {
        path: path.clone(),
        data,
        mode,
        acl: Acls::Open,
    }
}

fn exists(path: &Path) -> Request {
    Request::Exists {
        path: path.clone(),
        watch: false,
    }
}

/// A multi op creating a persistent receipt.
fn receipt_op(path: &Path, data: Vec<u8>) -> MultiOp {
    MultiOp::Create {
        path: path.clone(),
        data,
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    }
}

fn delete(path: &Path) -> Request {
    Request::Delete {
        path: path.clone(),
        version: ANY_VERSION,
    }
}

impl crate::rename::Rename for FixedQueue {
    fn rename(&mut self, r: &mut crate::rename::Renaming) {
        self.producer_receipt.rename(r);
        self.consumer_receipt.rename(r);
        self.session.rename(r);
        if let Phase::Read(cursor)
        | Phase::Claim(cursor, _)
        | Phase::ClaimSync(cursor, _)
        | Phase::ClaimVerify(cursor, _) = &mut self.phase
        {
            cursor.items.iter_mut().for_each(|item| item.rename(r));
        }
    }
}

/// The suffix of the receipts directory [`FixedQueue::new`] puts beside
/// the queue directory.
const RECEIPTS_SUFFIX: &str = "-receipts";

impl crate::rename::RenameRecipe for FixedQueue {
    /// Items `qn-<sequence>` (ranked) and receipts `p-<unique id>`,
    /// `c-<unique id>` (the id follows its client).
    fn rename_node(r: &mut crate::rename::Renaming, parent: &str, name: &str) -> String {
        if name.starts_with(ITEM_PREFIX) {
            return r.sequence_suffix(parent, name, ITEM_PREFIX.len());
        }
        let receipt = ["p-", "c-"]
            .into_iter()
            .find_map(|kind| Some((kind, name.strip_prefix(kind)?)));
        match receipt {
            Some((kind, id)) if parent.ends_with(RECEIPTS_SUFFIX) => match id.parse::<u64>() {
                Ok(id) if id.to_string().len() == name.len() - kind.len() => {
                    format!("{kind}{}", r.unique_id(id))
                }
                _ => name.to_owned(),
            },
            _ => name.to_owned(),
        }
    }

    /// A consumer receipt `<dir>-receipts/c-<id>` holds the name of the
    /// item it claimed under `<dir>`: its sequence is ranked.
    fn rename_data(r: &mut crate::rename::Renaming, path: &Path, data: &[u8]) -> Vec<u8> {
        let dir = path.parent().and_then(|receipts| {
            let dir = receipts.as_str().strip_suffix(RECEIPTS_SUFFIX)?;
            Path::new(dir).ok()
        });
        match (dir, std::str::from_utf8(data)) {
            (Some(dir), Ok(item))
                if path.name().starts_with("c-") && item.starts_with(ITEM_PREFIX) =>
            {
                r.sequence_suffix(&dir, item, ITEM_PREFIX.len())
                    .into_bytes()
            }
            _ => data.to_vec(),
        }
    }
}
