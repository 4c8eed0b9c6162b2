//! Sans-IO recipes written outside zkcheck to measure how often its
//! diagnoses name the right mechanism (issue 40): a lock on one ephemeral
//! node with a retry loop (`flag_lock.rs`), a ticket lock (`ticket_lock.rs`),
//! a semaphore that ranks by priority (`data_semaphore.rs`) and a work
//! queue with claim nodes (`claim_queue.rs`), each with
//! its bugs behind variants and a fixed variant, registered next to the
//! built-in recipes. `tests/precision.rs` holds the labels and the
//! measurement.

pub mod claim_queue;
pub mod data_semaphore;
pub mod flag_lock;
pub mod ticket_lock;

use flag_lock::{Bugs, FlagLock};
use zkcheck::shapes::{HoldCall, QueueCall};
use zkcheck::{RecipeEntry, RecipeKind, Registry, VariantTable};

/// The built-in recipes and this crate's four, with their variants.
pub fn registry() -> Registry {
    Registry::builtin()
        .with(flag_lock())
        .with(ticket_lock())
        .with(data_semaphore())
        .with(claim_queue())
}

fn claim_queue() -> RecipeEntry {
    let queues = VariantTable::queue(QueueCall::calls(), |c, refused_claim_is_mine: bool| {
        claim_queue::ClaimQueue::new(c.path.clone(), refused_claim_is_mine)
    })
    .needs_existing_path();
    RecipeEntry::new("claim_queue", RecipeKind::Queue, "/work").with_variants(queues.rows([
        (
            "refused_claim_is_mine",
            "takes a refused claim and a missing item for its own",
            true,
        ),
        ("fixed", "moves on from a refused claim", false),
    ]))
}

fn flag_lock() -> RecipeEntry {
    let locks = VariantTable::hold(HoldCall::calls(), |c, bugs: Bugs| {
        FlagLock::new(&c.path, c.unique_id, bugs)
    })
    .needs_existing_path();
    let none = Bugs::default();
    RecipeEntry::new("flag_lock", RecipeKind::ExclusiveLock, "/flag").with_variants(locks.rows([
        (
            "gone_means_wait",
            "waits for a deletion that already happened",
            Bugs {
                gone_means_wait: true,
                ..none
            },
        ),
        (
            "blind_retry",
            "creates again after a lost reply, without reading whose node is there",
            Bugs {
                blind_retry: true,
                ..none
            },
        ),
        (
            "fixed",
            "tries again; recovers its own node by its data",
            none,
        ),
    ]))
}

fn ticket_lock() -> RecipeEntry {
    let locks = VariantTable::hold(HoldCall::calls(), |c, watch_first: bool| {
        ticket_lock::TicketLock::new(c.path.clone(), watch_first)
    })
    .needs_existing_path();
    RecipeEntry::new("ticket_lock", RecipeKind::ExclusiveLock, "/tickets").with_variants(
        locks.rows([
            (
                "watch_first",
                "every waiter watches the ticket served",
                true,
            ),
            (
                "fixed",
                "each waiter watches the ticket before its own",
                false,
            ),
        ]),
    )
}

fn data_semaphore() -> RecipeEntry {
    let semaphores = VariantTable::hold(HoldCall::calls(), |c, by_priority: bool| {
        data_semaphore::DataSemaphore::new(c.path.clone(), c.max_leases, c.unique_id, by_priority)
    })
    .needs_existing_path();
    RecipeEntry::new("data_semaphore", RecipeKind::Semaphore, "/leases").with_variants(
        semaphores.rows([
            (
                "by_priority",
                "ranks the leases by the priority in their data",
                true,
            ),
            ("fixed", "ranks the leases by sequence number", false),
        ]),
    )
}
