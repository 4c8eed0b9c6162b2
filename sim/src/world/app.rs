//! What an application workload drives its recipe through, whatever runs
//! it: the simulator's [`super::Client`] (simulated time) or the real-server
//! driver's client (`crate::live`, wall-clock time). The built-in workloads
//! ([`super::workloads`]) are written against this trait, so the same
//! workload runs in both.

use crate::faults::MsRange;
use crate::oracles::ObserveCall;
use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use zk_recipes::{FencingToken, Observe, Recipe};

/// The recipe call type of an [`App`].
pub type Call<A> = <<A as App>::Recipe as zk_recipes::Recipe>::Call;
/// The recipe outcome type of an [`App`].
pub type Outcome<A> = <<A as App>::Recipe as zk_recipes::Recipe>::Outcome;

/// One client's application side.
pub trait App: Clone + Send + Sync + 'static {
    /// The recipe the workload drives.
    type Recipe: SimRecipe;
    /// This client's index (0-based).
    fn index(&self) -> usize;
    /// How many clients the run has.
    fn clients(&self) -> usize;
    /// Hands an application call to the recipe.
    fn call(&self, call: Call<Self>);
    /// Waits for the recipe's next outcome.
    fn next_outcome(&self) -> impl Future<Output = Outcome<Self>> + Send;
    /// Waits for the next outcome at most `ms`.
    fn outcome_within(&self, ms: u64) -> impl Future<Output = Option<Outcome<Self>>> + Send;
    /// Sleeps `ms`.
    fn sleep_ms(&self, ms: u64) -> impl Future<Output = ()> + Send;
    /// True once the faults have healed: finish what is started, start nothing new.
    fn stopping(&self) -> bool;
    /// A seeded draw in the range, for think and hold times.
    fn draw_ms(&self, range: MsRange) -> u64;
    /// Which of `alternatives` (at least 1) the workload picks: a seeded
    /// draw, or the choice tape's in an explored run.
    fn pick(&self, alternatives: usize) -> usize {
        self.draw_ms(MsRange::new(0, alternatives as u64 - 1)) as usize
    }
    /// Writes to the shared fenced resource; whether it accepted the token.
    fn write_resource(&self, token: FencingToken) -> bool;
    /// State shared by the workloads of this run (one value per type).
    fn run_state<T: Default + Send + 'static>(&self) -> Arc<Mutex<T>>;
    /// Time since the run started, in ns.
    fn now_ns(&self) -> u64;
}

/// The states the workloads of one run share, one per type ([`App::run_state`]).
pub type RunStates = BTreeMap<TypeId, Arc<dyn Any + Send + Sync>>;

/// The run's value of type `T`, created on first use.
pub fn run_state_in<T: Default + Send + 'static>(states: &mut RunStates) -> Arc<Mutex<T>> {
    let state = states
        .entry(TypeId::of::<T>())
        .or_insert_with(|| Arc::new(Mutex::new(T::default())))
        .clone();
    state
        .downcast::<Mutex<T>>()
        .expect("run state keyed by its type")
}

/// A recipe the world can run: its calls and outcomes are observable and
/// everything can move between tasks.
pub trait SimRecipe:
    Recipe<Call: ObserveCall + Send + 'static, Outcome: Observe + Send + 'static> + Send + 'static
{
}

impl<R> SimRecipe for R where
    R: Recipe<Call: ObserveCall + Send + 'static, Outcome: Observe + Send + 'static>
        + Send
        + 'static
{
}
