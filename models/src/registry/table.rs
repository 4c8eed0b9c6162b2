//! Several variants of one recipe in one line each: a [`VariantTable`]
//! holds what the variants share (the kind's calls, a constructor that
//! takes a flag, whether the directory must exist, the `[config]` keys
//! read) and makes one [`Variant`] per `(name, description, flag)` row.
//!
//! ```ignore
//! let locks = VariantTable::hold(HoldCalls::new(Call::Lock, Call::Unlock), |c, trust: bool| {
//!     SimpleLock::new(c.path.clone(), trust)
//! })
//! .needs_existing_path();
//! RecipeEntry::new("simple_lock", RecipeKind::ExclusiveLock, "/simple").with_variants(locks.rows([
//!     ("buggy", "trusts getChildren's order", true),
//!     ("fixed", "sorts children by sequence", false),
//! ]))
//! ```

use super::{RecipeEntry, Variant};
use crate::model::ModelRecipe;
use std::sync::Arc;
use zk_recipes::rename::RenameRecipe;
use zk_sim::scenario::ClientContext;
use zk_sim::world::adapters::{BarrierCalls, HoldCalls, QueueCalls};
use zk_sim::world::SimRecipe;

/// Makes one variant from its name, description and flag.
type MakeVariant<F> = Arc<dyn Fn(&str, &str, F) -> Variant + Send + Sync>;

/// The shared part of several variants of one recipe; [`Self::rows`]
/// makes the variants. `F` is the flag a row hands the constructor (a
/// `bool`, an enum of the bugs a variant has, a config struct).
#[derive(Clone)]
pub struct VariantTable<F> {
    make: MakeVariant<F>,
    needs_existing_path: bool,
    config_keys: Vec<&'static str>,
}

/// A constructor that takes the row's flag.
trait MakeWithFlag<R, F>: Fn(&ClientContext, F) -> R + Clone + Send + Sync + 'static {}

impl<R, F, T> MakeWithFlag<R, F> for T where
    T: Fn(&ClientContext, F) -> R + Clone + Send + Sync + 'static
{
}

/// `make` with the flag bound: the constructor one variant registers.
fn bind<R, F: Clone + Send + Sync + 'static>(
    make: impl MakeWithFlag<R, F>,
    flag: F,
) -> impl Fn(&ClientContext) -> R + Send + Sync + 'static {
    move |c| make(c, flag.clone())
}

impl<F: Clone + Send + Sync + 'static> VariantTable<F> {
    fn new(make: impl Fn(&str, &str, F) -> Variant + Send + Sync + 'static) -> Self {
        VariantTable {
            make: Arc::new(make),
            needs_existing_path: false,
            config_keys: Vec::new(),
        }
    }

    /// Hold variants ([`Variant::hold`]) of `make(context, flag)`.
    pub fn hold<R: ModelRecipe + SimRecipe>(
        calls: HoldCalls<R::Call>,
        make: impl Fn(&ClientContext, F) -> R + Clone + Send + Sync + 'static,
    ) -> Self {
        VariantTable::new(move |name, about, flag| {
            Variant::hold(name, about, calls.clone(), bind(make.clone(), flag))
        })
    }

    /// Hold variants of a recipe that declares its renaming
    /// ([`Variant::hold_renamable`]).
    pub fn hold_renamable<R: ModelRecipe + SimRecipe + RenameRecipe>(
        calls: HoldCalls<R::Call>,
        make: impl Fn(&ClientContext, F) -> R + Clone + Send + Sync + 'static,
    ) -> Self {
        VariantTable::new(move |name, about, flag| {
            Variant::hold_renamable(name, about, calls.clone(), bind(make.clone(), flag))
        })
    }

    /// Queue variants ([`Variant::queue`]).
    pub fn queue<R: ModelRecipe + SimRecipe>(
        calls: QueueCalls<R::Call>,
        make: impl Fn(&ClientContext, F) -> R + Clone + Send + Sync + 'static,
    ) -> Self {
        VariantTable::new(move |name, about, flag| {
            Variant::queue(name, about, calls.clone(), bind(make.clone(), flag))
        })
    }

    /// Queue variants of a recipe that declares its renaming
    /// ([`Variant::queue_renamable`]).
    pub fn queue_renamable<R: ModelRecipe + SimRecipe + RenameRecipe>(
        calls: QueueCalls<R::Call>,
        make: impl Fn(&ClientContext, F) -> R + Clone + Send + Sync + 'static,
    ) -> Self {
        VariantTable::new(move |name, about, flag| {
            Variant::queue_renamable(name, about, calls.clone(), bind(make.clone(), flag))
        })
    }

    /// Barrier variants ([`Variant::barrier`]).
    pub fn barrier<R: ModelRecipe + SimRecipe>(
        calls: BarrierCalls<R::Call>,
        make: impl Fn(&ClientContext, F) -> R + Clone + Send + Sync + 'static,
    ) -> Self {
        VariantTable::new(move |name, about, flag| {
            Variant::barrier(name, about, calls.clone(), bind(make.clone(), flag))
        })
    }

    /// Barrier variants of a recipe that declares its renaming
    /// ([`Variant::barrier_renamable`]).
    pub fn barrier_renamable<R: ModelRecipe + SimRecipe + RenameRecipe>(
        calls: BarrierCalls<R::Call>,
        make: impl Fn(&ClientContext, F) -> R + Clone + Send + Sync + 'static,
    ) -> Self {
        VariantTable::new(move |name, about, flag| {
            Variant::barrier_renamable(name, about, calls.clone(), bind(make.clone(), flag))
        })
    }

    /// Every variant's directory must exist before it runs
    /// ([`Variant::needs_existing_path`]).
    pub fn needs_existing_path(mut self) -> Self {
        self.needs_existing_path = true;
        self
    }

    /// Every variant reads these `[config]` keys ([`Variant::reads_config`]).
    pub fn reads_config(mut self, keys: &[&'static str]) -> Self {
        self.config_keys.extend_from_slice(keys);
        self
    }

    /// One variant per `(name, description, flag)` row, in row order.
    pub fn rows<'a>(&self, rows: impl IntoIterator<Item = (&'a str, &'a str, F)>) -> Vec<Variant> {
        rows.into_iter()
            .map(|(name, about, flag)| self.variant(name, about, flag))
            .collect()
    }

    /// The variant of one row.
    pub fn variant(&self, name: &str, about: &str, flag: F) -> Variant {
        let mut variant = (self.make)(name, about, flag).reads_config(&self.config_keys);
        if self.needs_existing_path {
            variant = variant.needs_existing_path();
        }
        variant
    }
}

impl RecipeEntry {
    /// Adds several variants (builder style), as [`RecipeEntry::variant`]
    /// adds one: e.g. a [`VariantTable`]'s rows.
    pub fn with_variants(self, variants: impl IntoIterator<Item = Variant>) -> RecipeEntry {
        variants.into_iter().fold(self, RecipeEntry::variant)
    }
}
