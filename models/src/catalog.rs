//! Finds a recipe model by name for the command line: `check` runs it,
//! `explore` serves stateright's Explorer for it. Each entry instantiates
//! the generic model for one recipe type, so callers stay non-generic.

use crate::model::{ModelRecipe, RecipeModel};
use crate::replay::{self, ReplayError, ReplayReport};
use crate::run::{self, CheckReport, RunOptions};
use crate::schedule::Schedule;
use crate::setup::Setup;
use crate::{barrier, curator_lock, election, lock, queue, semaphore, shared_lock};
use stateright::Model;

/// One recipe variant the catalog knows.
pub struct Entry {
    pub recipe: &'static str,
    pub variant: &'static str,
    /// What the variant is (one line, for `--help` style listings).
    pub about: &'static str,
    check: fn(&Setup, &RunOptions) -> CheckReport,
    explore: fn(&Setup, &str),
    replay: fn(&Setup, &Schedule) -> Result<ReplayReport, ReplayError>,
}

impl Entry {
    pub fn check(&self, setup: &Setup, options: &RunOptions) -> CheckReport {
        (self.check)(setup, options)
    }

    /// Replays a schedule of this model on the simulator's stepper, judged
    /// by the simulator's oracles (see [`crate::replay`]).
    pub fn replay(&self, schedule: &Schedule) -> Result<ReplayReport, ReplayError> {
        (self.replay)(&Setup::new(schedule.clients), schedule)
    }

    /// Serves the Explorer on `address`; returns only if serving fails.
    pub fn explore(&self, setup: &Setup, address: &str) {
        (self.explore)(setup, address)
    }
}

/// Why a model could not be found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("unknown recipe {0:?} (known: {known})", known = recipes().join(", "))]
    UnknownRecipe(String),
    #[error("recipe {recipe} has no variant {variant:?} (known: {known})")]
    UnknownVariant {
        recipe: String,
        variant: String,
        known: String,
    },
}

macro_rules! entry {
    ($recipe:literal, $variant:literal, $about:literal, $build:path) => {
        Entry {
            recipe: $recipe,
            variant: $variant,
            about: $about,
            check: |setup, options| run::check($build(setup), options),
            explore: |setup, address| serve($build(setup), address),
            replay: |setup, schedule| replay::replay(&$build(setup), schedule),
        }
    };
}

/// Every model, recipe by recipe.
pub const ENTRIES: &[Entry] = &[
    entry!(
        "lock",
        "original",
        "seed 000 WriteLock, bugs included",
        lock::original
    ),
    entry!(
        "lock",
        "fixed",
        "sequence order, unique id, predecessor watch",
        lock::fixed
    ),
    entry!(
        "curator_lock",
        "original",
        "Curator 2.5.0 InterProcessMutex as seed 002 uses it",
        curator_lock::original
    ),
    entry!(
        "curator_lock",
        "fixed",
        "container parents, owner check, zxid tokens",
        curator_lock::fixed
    ),
    entry!(
        "semaphore",
        "original",
        "Curator 2.5.0 InterProcessSemaphoreV2",
        semaphore::original
    ),
    entry!(
        "semaphore",
        "fixed",
        "one ticket for all leases, FIFO",
        semaphore::fixed
    ),
    entry!(
        "shared_lock",
        "original",
        "documented read/write lock, blind create retry",
        shared_lock::original
    ),
    entry!(
        "shared_lock",
        "fixed",
        "ticket with unique id, containers",
        shared_lock::fixed
    ),
    entry!(
        "election",
        "original",
        "seed 003 election: herd watch, blind retry",
        election::original
    ),
    entry!(
        "election",
        "fixed",
        "predecessor watch, unique id, owner check",
        election::fixed
    ),
    entry!(
        "queue",
        "original",
        "seed 000 DistributedQueue",
        queue::original
    ),
    entry!(
        "queue",
        "tutorial_original",
        "seed 001 tutorial Queue",
        queue::tutorial_original
    ),
    entry!(
        "queue",
        "fixed",
        "receipts in one multi: exactly once",
        queue::fixed
    ),
    entry!(
        "barrier",
        "original",
        "seed 001 tutorial Barrier, one host per member",
        barrier::original
    ),
    entry!(
        "barrier",
        "original_shared_host",
        "seed 001 tutorial Barrier, all members on one host",
        barrier::original_shared_host
    ),
    entry!(
        "barrier",
        "fixed",
        "documented double barrier with a ready node",
        barrier::fixed
    ),
];

/// The recipe names, in catalog order.
pub fn recipes() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ENTRIES.iter().map(|e| e.recipe).collect();
    names.dedup();
    names
}

/// The entry for `recipe` and `variant`.
pub fn find(recipe: &str, variant: &str) -> Result<&'static Entry, CatalogError> {
    let variants: Vec<&Entry> = ENTRIES.iter().filter(|e| e.recipe == recipe).collect();
    if variants.is_empty() {
        return Err(CatalogError::UnknownRecipe(recipe.to_string()));
    }
    variants
        .iter()
        .find(|e| e.variant == variant)
        .copied()
        .ok_or_else(|| CatalogError::UnknownVariant {
            recipe: recipe.to_string(),
            variant: variant.to_string(),
            known: variants
                .iter()
                .map(|e| e.variant)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

fn serve<R: ModelRecipe>(model: RecipeModel<R>, address: &str) {
    // Blocks for as long as the Explorer serves.
    let _ = model.checker().serve(address);
}
