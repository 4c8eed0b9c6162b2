//! Async recipes, as their users name them: the world's async bridge
//! (`crate::world::async_bridge`: the [`Bridge`] a simulated client crate
//! sits on, the [`Context`] an application reports through, [`ApiRecipe`]
//! the pass-through machine, [`AsyncWorkload`] what a variant registers),
//! named here above the world.

pub use crate::world::async_bridge::*;
