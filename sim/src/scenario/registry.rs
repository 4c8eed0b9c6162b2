//! The recipes a scenario can name, their variants and defaults, and the
//! simulation each (recipe, variant) pair runs.

use super::Scenario;
use crate::oracles::Property;
use crate::world::adapters::{BarrierCalls, HoldCalls, QueueCalls};
use crate::world::workloads::{barrier_rounds, hold_cycles, queue_traffic};
use crate::world::{RunReport, Simulation};
use std::str::FromStr;
use zk_recipes::barrier::{FixedBarrier, OriginalBarrier, TutorialNodeMode};
use zk_recipes::curator_lock::{FixedCuratorLock, OriginalCuratorLock};
use zk_recipes::election::{FixedElection, OriginalElection};
use zk_recipes::lock::{FixedLock, OriginalLock};
use zk_recipes::queue::{DistributedQueueOriginal, FixedQueue, TutorialQueueOriginal};
use zk_recipes::semaphore::{FixedSemaphore, OriginalSemaphore};
use zk_recipes::shared_lock::{FixedSharedLock, OriginalSharedLock};

/// A recipe family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecipeKind {
    Lock,
    CuratorLock,
    SharedLock,
    Semaphore,
    Election,
    Queue,
    Barrier,
}

impl RecipeKind {
    pub const ALL: [RecipeKind; 7] = [
        RecipeKind::Lock,
        RecipeKind::CuratorLock,
        RecipeKind::SharedLock,
        RecipeKind::Semaphore,
        RecipeKind::Election,
        RecipeKind::Queue,
        RecipeKind::Barrier,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RecipeKind::Lock => "lock",
            RecipeKind::CuratorLock => "curator_lock",
            RecipeKind::SharedLock => "shared_lock",
            RecipeKind::Semaphore => "semaphore",
            RecipeKind::Election => "election",
            RecipeKind::Queue => "queue",
            RecipeKind::Barrier => "barrier",
        }
    }

    pub fn variants(self) -> &'static [&'static str] {
        match self {
            RecipeKind::Queue => &["original", "tutorial_original", "fixed"],
            _ => &["original", "fixed"],
        }
    }

    pub fn default_path(self) -> &'static str {
        match self {
            RecipeKind::Lock => "/locks",
            RecipeKind::CuratorLock => "/locks/key",
            RecipeKind::SharedLock => "/shared/db",
            RecipeKind::Semaphore => "/semaphores/db",
            RecipeKind::Election => "/leader",
            RecipeKind::Queue => "/q",
            RecipeKind::Barrier => "/b1",
        }
    }

    /// The recipe's directory must exist before it runs (the seed code
    /// does not create it); the others create their parents themselves.
    pub fn needs_existing_path(self, variant: &str) -> bool {
        match self {
            RecipeKind::Lock | RecipeKind::Election | RecipeKind::Queue | RecipeKind::Barrier => {
                true
            }
            RecipeKind::SharedLock => variant == "original",
            RecipeKind::CuratorLock | RecipeKind::Semaphore => false,
        }
    }

    /// The application workload the simulator runs for this recipe.
    pub fn workload(self) -> WorkloadKind {
        match self {
            RecipeKind::Queue => WorkloadKind::Queue,
            RecipeKind::Barrier => WorkloadKind::Barrier,
            _ => WorkloadKind::Hold,
        }
    }

    /// The properties that mean something for this recipe: asking a lock
    /// for `exactly_once` is an error, not a vacuous pass.
    pub fn applicable_properties(self) -> &'static [Property] {
        use Property::*;
        match self {
            RecipeKind::Lock
            | RecipeKind::CuratorLock
            | RecipeKind::SharedLock
            | RecipeKind::Semaphore => &[
                MutualExclusion,
                FencedMutualExclusion,
                Fifo,
                Herd,
                Liveness,
                NoLeaks,
            ],
            RecipeKind::Election => &[
                OneLeader,
                FencedMutualExclusion,
                Fifo,
                Herd,
                Liveness,
                NoLeaks,
            ],
            RecipeKind::Queue => &[ExactlyOnce, Liveness, NoLeaks],
            RecipeKind::Barrier => &[Barrier, Liveness, NoLeaks],
        }
    }

    pub fn default_properties(self) -> Vec<Property> {
        let mut properties = match self {
            RecipeKind::Lock
            | RecipeKind::CuratorLock
            | RecipeKind::SharedLock
            | RecipeKind::Semaphore => {
                vec![Property::MutualExclusion, Property::FencedMutualExclusion]
            }
            RecipeKind::Election => vec![Property::OneLeader],
            RecipeKind::Queue => vec![Property::ExactlyOnce],
            RecipeKind::Barrier => vec![Property::Barrier],
        };
        properties.extend([Property::Liveness, Property::NoLeaks]);
        properties
    }
}

/// The shape of a recipe's application workload (`world::workloads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Acquire, hold, release (locks, elections, semaphores).
    Hold,
    /// Producers offer, consumers take.
    Queue,
    /// Enter, work, leave.
    Barrier,
}

impl WorkloadKind {
    /// The `[workload]` keys this workload reads.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Hold => &["cycles", "hold_ms", "think_ms", "use_resource"],
            WorkloadKind::Queue => &["producers", "items", "take_wait_ms", "think_ms"],
            WorkloadKind::Barrier => &["rounds", "work_ms", "think_ms"],
        }
    }
}

impl FromStr for RecipeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<RecipeKind, String> {
        RecipeKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = RecipeKind::ALL.iter().map(|kind| kind.name()).collect();
                format!(
                    "unknown recipe `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// Runs one seed of a scenario, whatever its recipe type.
pub trait Runner: Send + Sync {
    fn run(&self, seed: u64, trace: bool) -> RunReport;
}

impl<R: crate::world::SimRecipe> Runner for Simulation<R> {
    fn run(&self, seed: u64, trace: bool) -> RunReport {
        self.run_with_trace(seed, trace)
    }
}

fn holding<R: HoldCalls>(
    scenario: &Scenario,
    make: impl Fn(u64) -> R + Send + Sync + 'static,
) -> Box<dyn Runner> {
    let spec = scenario.raw.workload.clone();
    Box::new(Simulation::new(
        scenario.world_config(),
        move |_, uid| make(uid),
        move |client| hold_cycles(client, spec.clone()),
    ))
}

fn queueing<R: QueueCalls>(
    scenario: &Scenario,
    make: impl Fn(u64) -> R + Send + Sync + 'static,
) -> Box<dyn Runner> {
    let spec = scenario.raw.workload.clone();
    Box::new(Simulation::new(
        scenario.world_config(),
        move |_, uid| make(uid),
        move |client| queue_traffic(client, spec.clone()),
    ))
}

fn barrier<R: BarrierCalls>(
    scenario: &Scenario,
    make: impl Fn(usize, u64) -> R + Send + Sync + 'static,
) -> Box<dyn Runner> {
    let spec = scenario.raw.workload.clone();
    Box::new(Simulation::new(
        scenario.world_config(),
        make,
        move |client| barrier_rounds(client, spec.clone()),
    ))
}

/// The simulation of a checked scenario (its recipe and variant are known).
pub fn runner(scenario: &Scenario) -> Box<dyn Runner> {
    let path = scenario.path.clone();
    let config = &scenario.raw.config;
    let leases = config.max_leases.unwrap_or(1);
    let size = config.barrier_size.unwrap_or(scenario.raw.clients);
    match (scenario.recipe, scenario.raw.variant.as_str()) {
        (RecipeKind::Lock, "original") => {
            holding(scenario, move |_| OriginalLock::new(path.clone()))
        }
        (RecipeKind::Lock, _) => holding(scenario, move |uid| FixedLock::new(path.clone(), uid)),
        (RecipeKind::CuratorLock, "original") => holding(scenario, move |uid| {
            OriginalCuratorLock::new(path.clone(), uid)
        }),
        (RecipeKind::CuratorLock, _) => holding(scenario, move |uid| {
            FixedCuratorLock::new(path.clone(), uid)
        }),
        (RecipeKind::SharedLock, "original") => {
            holding(scenario, move |_| OriginalSharedLock::new(path.clone()))
        }
        (RecipeKind::SharedLock, _) => {
            holding(scenario, move |uid| FixedSharedLock::new(path.clone(), uid))
        }
        (RecipeKind::Semaphore, "original") => holding(scenario, move |uid| {
            OriginalSemaphore::new(path.clone(), leases, uid)
        }),
        (RecipeKind::Semaphore, _) => holding(scenario, move |uid| {
            FixedSemaphore::new(path.clone(), leases, uid)
        }),
        (RecipeKind::Election, "original") => {
            holding(scenario, move |_| OriginalElection::new(path.clone()))
        }
        (RecipeKind::Election, _) => {
            holding(scenario, move |uid| FixedElection::new(path.clone(), uid))
        }
        (RecipeKind::Queue, "original") => queueing(scenario, move |_| {
            DistributedQueueOriginal::new(path.clone())
        }),
        (RecipeKind::Queue, "tutorial_original") => {
            queueing(scenario, move |_| TutorialQueueOriginal::new(path.clone()))
        }
        (RecipeKind::Queue, _) => queueing(scenario, move |uid| FixedQueue::new(path.clone(), uid)),
        (RecipeKind::Barrier, "original") => {
            let shared_host = config.hosts.as_deref() == Some("shared");
            let mode = match config.node_mode.as_deref() {
                Some("ephemeral_sequential") => TutorialNodeMode::EphemeralSequential,
                _ => TutorialNodeMode::Ephemeral,
            };
            barrier(scenario, move |client, _| {
                let host = if shared_host {
                    "host".to_string()
                } else {
                    format!("host-{client}")
                };
                OriginalBarrier::with_node_mode(path.clone(), size, host, mode)
            })
        }
        (RecipeKind::Barrier, _) => barrier(scenario, move |_, uid| {
            FixedBarrier::new(path.clone(), size, uid)
        }),
    }
}
