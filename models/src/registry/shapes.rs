//! Ready [`Observe`] and [`ObserveCall`] impls for the common outcome and
//! call shapes, so a user's recipe needs no hand-written mapping:
//!
//! - ready types: a recipe may answer with [`HoldOutcome`],
//!   [`QueueOutcome`] or [`BarrierOutcome`] and take [`HoldCall`],
//!   [`QueueCall`] or [`BarrierCall`] (with their registration calls:
//!   [`HoldCall::calls`], ...): nothing to implement;
//! - its own enums: [`observe_outcomes!`](crate::observe_outcomes) and
//!   [`observe_calls!`](crate::observe_calls) write the impls from one line
//!   per variant, with the helpers of [`observe`] on the right:
//!
//! ```ignore
//! zkcheck::observe_outcomes!(Outcome {
//!     Acquired(sequence) => acquired(sequence),
//!     Released => released(),
//!     Failed(why) => failed(why),
//! });
//! zkcheck::observe_calls!(Call {
//!     Lock => acquire(),
//!     Unlock => release(),
//! });
//! ```

use zk_recipes::{FencingToken, Hold, Observation, Observe};
use zk_sim::oracles::{CallObservation, ObserveCall};
use zk_sim::world::adapters::{BarrierCalls, HoldCalls, QueueCalls};

/// What the macros expand to (not part of the API).
#[doc(hidden)]
pub use zk_recipes::{Observation as __Observation, Observe as __Observe};
#[doc(hidden)]
pub use zk_sim::oracles::{CallObservation as __CallObservation, ObserveCall as __ObserveCall};

/// The observations and call observations the macros' right-hand sides
/// build, by name: `acquired(token)`, `failed(reason)`, `offer(item)`, ...
pub mod observe {
    use super::{CallObservation, FencingToken, Hold, Observation};
    use std::fmt::{Debug, Display};

    /// A value that is a fencing token: an integer (a sequence number, a
    /// zxid) or a [`FencingToken`], by value or by reference.
    pub trait Token {
        fn token(&self) -> FencingToken;
    }

    impl Token for FencingToken {
        fn token(&self) -> FencingToken {
            *self
        }
    }

    impl Token for i64 {
        fn token(&self) -> FencingToken {
            FencingToken(*self)
        }
    }

    impl Token for i32 {
        fn token(&self) -> FencingToken {
            FencingToken(i64::from(*self))
        }
    }

    impl Token for u32 {
        fn token(&self) -> FencingToken {
            FencingToken(i64::from(*self))
        }
    }

    impl<T: Token + ?Sized> Token for &T {
        fn token(&self) -> FencingToken {
            (**self).token()
        }
    }

    /// An exclusive hold (a lock, a leadership) with `token`.
    pub fn acquired(token: impl Token) -> Observation {
        Observation::Acquired {
            hold: Hold::Exclusive,
            token: token.token(),
        }
    }

    /// A shared hold (a read lock) with `token`.
    pub fn shared(token: impl Token) -> Observation {
        Observation::Acquired {
            hold: Hold::Shared,
            token: token.token(),
        }
    }

    /// `count` leases of a semaphore, with `token`.
    pub fn leases(count: u32, token: impl Token) -> Observation {
        Observation::Acquired {
            hold: Hold::Leases(count),
            token: token.token(),
        }
    }

    pub fn released() -> Observation {
        Observation::Released
    }

    /// The client learned it no longer holds what it held.
    pub fn lost() -> Observation {
        Observation::Lost
    }

    pub fn timed_out() -> Observation {
        Observation::TimedOut
    }

    /// The queue accepted the item (known from the offer call it answers).
    pub fn offered() -> Observation {
        Observation::Offered { item: Vec::new() }
    }

    /// The queue delivered `item` to this client.
    pub fn taken(item: impl AsRef<[u8]>) -> Observation {
        Observation::Taken {
            item: item.as_ref().to_vec(),
        }
    }

    /// A non-blocking take found the queue empty.
    pub fn empty() -> Observation {
        Observation::Empty
    }

    pub fn entered() -> Observation {
        Observation::Entered
    }

    pub fn left() -> Observation {
        Observation::Left
    }

    /// The call failed, for `reason` (its `Display`).
    pub fn failed(reason: impl Display) -> Observation {
        Observation::Failed {
            reason: reason.to_string(),
        }
    }

    /// The call failed, for `reason` (its `Debug`, for an error type
    /// without `Display`).
    pub fn failed_debug(reason: impl Debug) -> Observation {
        Observation::Failed {
            reason: format!("{reason:?}"),
        }
    }

    /// The recipe's own invariant `property` broke (`detail`: how): judged
    /// as a violation of the property so named (see
    /// `zk_recipes::check_property_name` for the names allowed).
    pub fn violated(property: &str, detail: impl Display) -> Observation {
        Observation::Violated {
            property: property.to_string(),
            detail: detail.to_string(),
        }
    }

    pub fn acquire() -> CallObservation {
        CallObservation::Acquire
    }

    pub fn release() -> CallObservation {
        CallObservation::Release
    }

    /// Offers `item`.
    pub fn offer(item: impl AsRef<[u8]>) -> CallObservation {
        CallObservation::Offer {
            item: item.as_ref().to_vec(),
        }
    }

    pub fn take() -> CallObservation {
        CallObservation::Take
    }

    pub fn enter() -> CallObservation {
        CallObservation::Enter
    }

    pub fn leave() -> CallObservation {
        CallObservation::Leave
    }

    /// A call the oracles do not judge.
    pub fn other() -> CallObservation {
        CallObservation::Other
    }
}

/// `impl Observe for $type`, one `Variant(bindings) => observation` arm per
/// variant of the outcome enum (a variant's name alone, or with a tuple or
/// a struct pattern); the arms' right-hand sides see the helpers of
/// [`observe`](crate::registry::shapes::observe) and bind by reference.
/// A recipe that reports its own invariants broken (`violated(name, why)`)
/// names them first, `invariants: ["name", ...];`, as `Observe::INVARIANTS`.
#[macro_export]
macro_rules! observe_outcomes {
    ($type:ident { invariants: [$($invariant:expr),* $(,)?]; $( $variant:ident $( ( $($tuple:tt)* ) )? $( { $($fields:tt)* } )? => $observation:expr ),* $(,)? }) => {
        impl $crate::registry::shapes::__Observe for $type {
            const INVARIANTS: &'static [&'static str] = &[$($invariant),*];

            fn observe(&self) -> $crate::registry::shapes::__Observation {
                #[allow(unused_imports)]
                use $crate::registry::shapes::observe::*;
                match self {
                    $( $type::$variant $( ( $($tuple)* ) )? $( { $($fields)* } )? => $observation, )*
                }
            }
        }
    };
    ($type:ident { $($arms:tt)* }) => {
        $crate::observe_outcomes!($type { invariants: []; $($arms)* });
    };
}

/// `impl ObserveCall for $type`, one arm per variant of the call enum, as
/// [`observe_outcomes!`](crate::observe_outcomes) (`acquire()`,
/// `release()`, `offer(item)`, `take()`, `enter()`, `leave()`, `other()`).
#[macro_export]
macro_rules! observe_calls {
    ($type:ident { $( $variant:ident $( ( $($tuple:tt)* ) )? $( { $($fields:tt)* } )? => $observation:expr ),* $(,)? }) => {
        impl $crate::registry::shapes::__ObserveCall for $type {
            fn observe_call(&self) -> $crate::registry::shapes::__CallObservation {
                #[allow(unused_imports)]
                use $crate::registry::shapes::observe::*;
                match self {
                    $( $type::$variant $( ( $($tuple)* ) )? $( { $($fields)* } )? => $observation, )*
                }
            }
        }
    };
}

/// The calls of a hold recipe: acquire, release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HoldCall {
    Acquire,
    Release,
}

impl HoldCall {
    /// The registration's calls ([`crate::Variant::hold`]).
    pub fn calls() -> HoldCalls<HoldCall> {
        HoldCalls::new(HoldCall::Acquire, HoldCall::Release)
    }
}

impl ObserveCall for HoldCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            HoldCall::Acquire => CallObservation::Acquire,
            HoldCall::Release => CallObservation::Release,
        }
    }
}

/// The answers of a hold recipe.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HoldOutcome {
    /// Held (exclusive, shared or leases), with a fencing token.
    Acquired {
        hold: Hold,
        token: FencingToken,
    },
    Released,
    /// The client learned it no longer holds (its session ended).
    Lost,
    /// A timed acquisition gave up.
    TimedOut,
    Failed(String),
}

impl HoldOutcome {
    /// An exclusive hold with `token`.
    pub fn exclusive(token: i64) -> HoldOutcome {
        HoldOutcome::Acquired {
            hold: Hold::Exclusive,
            token: FencingToken(token),
        }
    }
}

impl Observe for HoldOutcome {
    fn observe(&self) -> Observation {
        match self {
            HoldOutcome::Acquired { hold, token } => Observation::Acquired {
                hold: *hold,
                token: *token,
            },
            HoldOutcome::Released => Observation::Released,
            HoldOutcome::Lost => Observation::Lost,
            HoldOutcome::TimedOut => Observation::TimedOut,
            HoldOutcome::Failed(reason) => observe::failed(reason),
        }
    }
}

/// The calls of a queue: offer an item, take one (waiting for it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueCall {
    Offer(Vec<u8>),
    Take,
}

impl QueueCall {
    /// The registration's calls ([`crate::Variant::queue`]).
    pub fn calls() -> QueueCalls<QueueCall> {
        QueueCalls::new(QueueCall::Offer, QueueCall::Take)
    }
}

impl ObserveCall for QueueCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            QueueCall::Offer(item) => observe::offer(item),
            QueueCall::Take => CallObservation::Take,
        }
    }
}

/// The answers of a queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum QueueOutcome {
    Offered,
    Took(Vec<u8>),
    /// A non-blocking take found nothing.
    Empty,
    /// The call failed; an offer may or may not have enqueued its item.
    Failed(String),
}

impl Observe for QueueOutcome {
    fn observe(&self) -> Observation {
        match self {
            QueueOutcome::Offered => observe::offered(),
            QueueOutcome::Took(item) => observe::taken(item),
            QueueOutcome::Empty => Observation::Empty,
            QueueOutcome::Failed(reason) => observe::failed(reason),
        }
    }
}

/// The calls of a barrier: enter, leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierCall {
    Enter,
    Leave,
}

impl BarrierCall {
    /// The registration's calls ([`crate::Variant::barrier`]).
    pub fn calls() -> BarrierCalls<BarrierCall> {
        BarrierCalls::new(BarrierCall::Enter, BarrierCall::Leave)
    }
}

impl ObserveCall for BarrierCall {
    fn observe_call(&self) -> CallObservation {
        match self {
            BarrierCall::Enter => CallObservation::Enter,
            BarrierCall::Leave => CallObservation::Leave,
        }
    }
}

/// The answers of a barrier.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BarrierOutcome {
    Entered,
    Left,
    Failed(String),
}

impl Observe for BarrierOutcome {
    fn observe(&self) -> Observation {
        match self {
            BarrierOutcome::Entered => Observation::Entered,
            BarrierOutcome::Left => Observation::Left,
            BarrierOutcome::Failed(reason) => observe::failed(reason),
        }
    }
}
