//! A user's own recipe checked by zkcheck: the lock in `simple_lock.rs`,
//! registered next to the built-in recipes.

pub mod simple_lock;

use simple_lock::{Call, SimpleLock};
use zkcheck::{HoldCalls, RecipeEntry, RecipeKind, Registry, VariantTable};

/// The built-in recipes and `simple_lock` with its two variants.
pub fn registry() -> Registry {
    // `hold_renamable`: the lock declares its renaming (`--symmetry`, `--ranks`).
    let calls = HoldCalls::new(Call::Lock, Call::Unlock);
    let locks = VariantTable::hold_renamable(calls, |c, trust_server_order: bool| {
        SimpleLock::new(c.path.clone(), trust_server_order)
    })
    .needs_existing_path(); // it does not create /simple
    Registry::builtin().with(
        RecipeEntry::new("simple_lock", RecipeKind::ExclusiveLock, "/simple").with_variants(
            locks.rows([
                ("buggy", "trusts getChildren's order", true),
                ("fixed", "sorts children by sequence", false),
            ]),
        ),
    )
}
