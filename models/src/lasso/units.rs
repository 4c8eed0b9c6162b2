//! The weak-fairness units of the lasso search: the kinds of progress
//! step a client takes, the units they make with the server's and the
//! followers' steps, and the bit sets (one `u128`) the search keeps them in.

use crate::action::Action;
use crate::state::ClientId;
use std::fmt;

/// The kinds of progress step a client takes; with the client, a
/// weak-fairness unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepKind {
    Call,
    Send,
    Deliver,
    FireTimer,
    Reconnect,
    ReconnectFails,
    LearnExpiry,
}

impl StepKind {
    const ALL: [StepKind; 7] = [
        StepKind::Call,
        StepKind::Send,
        StepKind::Deliver,
        StepKind::FireTimer,
        StepKind::Reconnect,
        StepKind::ReconnectFails,
        StepKind::LearnExpiry,
    ];
}

/// Most clients and servers the unit bit sets have room for.
pub(super) const MAX_UNIT_CLIENTS: usize = 16;
const REAP_BIT: u8 = (MAX_UNIT_CLIENTS * StepKind::ALL.len()) as u8;
/// The last bit: followers take the bits between (fewer than
/// [`MAX_UNIT_CLIENTS`] servers).
const ABANDONED_BIT: u8 = (Units::BITS - 1) as u8;

/// What weak fairness is about: a client's progress steps of one kind, the
/// server's reaper, or one follower's log application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FairnessUnit {
    Client {
        client: ClientId,
        kind: StepKind,
    },
    Reap,
    Apply {
        server: u8,
    },
    /// The server expiring sessions their clients gave up on.
    ExpireAbandoned,
}

impl FairnessUnit {
    /// The unit of a progress action; None for a fault.
    pub fn of(action: Action) -> Option<FairnessUnit> {
        let kind = match action {
            Action::Call(_) => StepKind::Call,
            Action::Send { .. } => StepKind::Send,
            Action::Deliver(_) => StepKind::Deliver,
            Action::FireTimer(_) => StepKind::FireTimer,
            Action::Reconnect { .. } => StepKind::Reconnect,
            Action::ReconnectFails(_) => StepKind::ReconnectFails,
            Action::LearnExpiry { .. } => StepKind::LearnExpiry,
            Action::Reap => return Some(FairnessUnit::Reap),
            Action::ExpireAbandoned { .. } => return Some(FairnessUnit::ExpireAbandoned),
            Action::Apply { server } => return Some(FairnessUnit::Apply { server }),
            _ => return None,
        };
        let client = action.client().expect("a client's step");
        Some(FairnessUnit::Client { client, kind })
    }

    pub(super) fn bit(self) -> u8 {
        match self {
            FairnessUnit::Client { client, kind } => {
                (client * StepKind::ALL.len() + kind as usize) as u8
            }
            FairnessUnit::Reap => REAP_BIT,
            FairnessUnit::Apply { server } => REAP_BIT + server,
            FairnessUnit::ExpireAbandoned => ABANDONED_BIT,
        }
    }

    fn from_bit(bit: u8) -> FairnessUnit {
        let kinds = StepKind::ALL.len() as u8;
        match bit {
            b if b < REAP_BIT => FairnessUnit::Client {
                client: usize::from(b / kinds),
                kind: StepKind::ALL[usize::from(b % kinds)],
            },
            REAP_BIT => FairnessUnit::Reap,
            ABANDONED_BIT => FairnessUnit::ExpireAbandoned,
            b => FairnessUnit::Apply {
                server: b - REAP_BIT,
            },
        }
    }
}

impl fmt::Display for FairnessUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = |kind: StepKind| match kind {
            StepKind::Call => "call",
            StepKind::Send => "send",
            StepKind::Deliver => "deliver",
            StepKind::FireTimer => "fire_timer",
            StepKind::Reconnect => "reconnect",
            StepKind::ReconnectFails => "reconnect_fails",
            StepKind::LearnExpiry => "learn_expiry",
        };
        match self {
            FairnessUnit::Client { client, kind: k } => write!(f, "c{client} {}", kind(*k)),
            FairnessUnit::Reap => write!(f, "server reap"),
            FairnessUnit::ExpireAbandoned => write!(f, "server expire_abandoned"),
            FairnessUnit::Apply { server } => write!(f, "server {server} apply"),
        }
    }
}

/// A set of fairness units.
pub(super) type Units = u128;

pub(super) fn bit(unit: FairnessUnit) -> Units {
    1 << unit.bit()
}

pub(super) fn units_in(set: Units) -> impl Iterator<Item = FairnessUnit> {
    (0..Units::BITS as u8)
        .filter(move |b| set & (1 << b) != 0)
        .map(FairnessUnit::from_bit)
}
