//! A user's own recipe checked by zkcheck: the lock in `simple_lock.rs`,
//! registered next to the built-in recipes.

pub mod simple_lock;

use simple_lock::{Call, SimpleLock};
use zkcheck::{ClientContext, HoldCalls, RecipeEntry, RecipeKind, Registry, Variant};

/// The built-in recipes and `simple_lock` with its two variants.
pub fn registry() -> Registry {
    let variant = |name: &str, about: &str, trust_server_order: bool| {
        let calls = HoldCalls::new(Call::Lock, Call::Unlock);
        // `hold_renamable`: the lock declares its renaming (`--symmetry`, `--ranks`).
        Variant::hold_renamable(name, about, calls, move |c: &ClientContext| {
            SimpleLock::new(c.path.clone(), trust_server_order)
        })
        .needs_existing_path() // it does not create /simple
    };
    Registry::builtin().with(
        RecipeEntry::new("simple_lock", RecipeKind::ExclusiveLock, "/simple")
            .variant(variant("buggy", "trusts getChildren's order", true))
            .variant(variant("fixed", "sorts children by sequence", false)),
    )
}
