//! Mutual exclusion (plain and fenced) and one leader at a time.
//!
//! Plain: a client holds from its `Acquired` outcome until it calls release
//! or learns it lost the hold; two conflicting holds of different clients
//! at once break it. Each of a client's holds is tracked on its own (an
//! async recipe may take several: nested locks, a read lock under a write
//! lock): releasing one ends that one only.
//! Fenced: what a shared resource that rejects stale tokens sees; the
//! tokens of live grants (the grantee's session still alive on the server)
//! must grow strictly, and two clients must never get writes accepted with
//! the same token. A grant to a client whose session already ended (it was
//! paused while the answer waited for it) is stale by definition: the
//! resource fences it off, so it does not count.

use super::{fmt_time, CallObservation, ClientIndex, Property, Seen, SimNanos, View, Violation};
use std::collections::BTreeMap;
use zk_recipes::{FencingToken, Hold, HoldId, Observation};

#[derive(Clone, Copy, Debug)]
struct Holding {
    hold: Hold,
    token: FencingToken,
    since: SimNanos,
}

/// Never two conflicting holders.
pub struct ExclusionCheck {
    property: Property,
    /// Every hold in force, by client and hold.
    holders: BTreeMap<(ClientIndex, HoldId), Holding>,
    max_leases: u32,
}

impl ExclusionCheck {
    pub fn new(property: Property, _clients: usize, max_leases: u32) -> ExclusionCheck {
        ExclusionCheck {
            property,
            holders: BTreeMap::new(),
            max_leases,
        }
    }

    /// One event about `holder`: a client's hold.
    pub fn seen(
        &mut self,
        at: SimNanos,
        holder: (ClientIndex, HoldId),
        seen: &Seen,
    ) -> Option<Violation> {
        match seen {
            Seen::Outcome(Observation::Acquired { hold, token }) => {
                let violation = self.conflict(at, holder.0, *hold, *token);
                let since = at;
                let (hold, token) = (*hold, *token);
                self.holders.insert(holder, Holding { hold, token, since });
                violation
            }
            Seen::Call(CallObservation::Release)
            | Seen::Outcome(Observation::Released | Observation::Lost) => {
                self.holders.remove(&holder);
                None
            }
            _ => None,
        }
    }

    fn conflict(
        &self,
        at: SimNanos,
        client: ClientIndex,
        hold: Hold,
        token: FencingToken,
    ) -> Option<Violation> {
        let others: Vec<(ClientIndex, Holding)> = self
            .holders
            .iter()
            .filter(|((other, _), _)| *other != client)
            .map(|((other, _), holding)| (*other, *holding))
            .collect();
        let conflicting: Vec<&(ClientIndex, Holding)> = match hold {
            Hold::Exclusive => others.iter().collect(),
            Hold::Shared => others
                .iter()
                .filter(|(_, h)| h.hold == Hold::Exclusive)
                .collect(),
            Hold::Leases(n) => {
                let leased: u32 = others
                    .iter()
                    .map(|(_, h)| match h.hold {
                        Hold::Leases(m) => m,
                        _ => 0,
                    })
                    .sum();
                let exclusive_held = others.iter().any(|(_, h)| h.hold == Hold::Exclusive);
                if exclusive_held || leased + n > self.max_leases {
                    others.iter().collect()
                } else {
                    Vec::new()
                }
            }
        };
        if conflicting.is_empty() {
            return None;
        }
        let mut events: Vec<String> = conflicting
            .iter()
            .map(|(other, h)| {
                format!(
                    "{} c{other}: acquired {:?} with token {} (still holds)",
                    fmt_time(h.since),
                    h.hold,
                    h.token.0
                )
            })
            .collect();
        events.push(format!(
            "{} c{client}: acquired {hold:?} with token {}",
            fmt_time(at),
            token.0
        ));
        let holders: Vec<String> = conflicting
            .iter()
            .map(|(other, _)| format!("c{other}"))
            .collect();
        Some(Violation {
            property: self.property,
            at_ns: at,
            message: format!(
                "c{client} acquired {hold:?} while {} held it",
                holders.join(", ")
            ),
            events,
            diagnosis: None,
            invariant: None,
        })
    }
}

/// Fencing tokens grow with every exclusive acquisition and identify one holder.
#[derive(Default)]
pub struct FencedCheck {
    /// The largest token granted so far: (token, client, time).
    max_granted: Option<(i64, ClientIndex, SimNanos)>,
    /// The last write the resource accepted: (token, client, time).
    last_accepted: Option<(i64, ClientIndex, SimNanos)>,
}

impl FencedCheck {
    pub fn seen(
        &mut self,
        at: SimNanos,
        client: ClientIndex,
        seen: &Seen,
        view: &View,
    ) -> Option<Violation> {
        match seen {
            Seen::Outcome(Observation::Acquired {
                hold: Hold::Exclusive,
                token,
            }) => {
                let live = view
                    .sessions
                    .get(client)
                    .copied()
                    .flatten()
                    .is_some_and(|s| view.server.is_session_alive(s));
                if live {
                    self.granted(at, client, token.0)
                } else {
                    None
                }
            }
            Seen::ResourceWrite {
                token,
                accepted: true,
            } => self.accepted(at, client, *token),
            _ => None,
        }
    }

    fn granted(&mut self, at: SimNanos, client: ClientIndex, token: i64) -> Option<Violation> {
        let previous = self.max_granted;
        if previous.is_none_or(|(max, _, _)| token > max) {
            self.max_granted = Some((token, client, at));
        }
        let (max, holder, since) = previous?;
        if token > max {
            return None;
        }
        Some(Violation {
            property: Property::FencedMutualExclusion,
            at_ns: at,
            message: format!("c{client} was granted token {token}, not above token {max} granted earlier to c{holder}"),
            events: vec![
                format!("{} c{holder}: acquired with token {max}", fmt_time(since)),
                format!("{} c{client}: acquired with token {token}", fmt_time(at)),
            ],
            diagnosis: None,
            invariant: None,
        })
    }

    fn accepted(&mut self, at: SimNanos, client: ClientIndex, token: i64) -> Option<Violation> {
        let previous = self.last_accepted.replace((token, client, at));
        let (last, writer, when) = previous?;
        if last != token || writer == client {
            return None;
        }
        Some(Violation {
            property: Property::FencedMutualExclusion,
            at_ns: at,
            message: format!(
                "the resource accepted writes with token {token} from both c{writer} and c{client}"
            ),
            events: vec![
                format!(
                    "{} c{writer}: write with token {token} accepted",
                    fmt_time(when)
                ),
                format!(
                    "{} c{client}: write with token {token} accepted",
                    fmt_time(at)
                ),
            ],
            diagnosis: None,
            invariant: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{ServerConfig, ZkServer};
    use zk_recipes::zk::SessionId;

    fn acquired(token: i64) -> Seen {
        Seen::Outcome(Observation::Acquired {
            hold: Hold::Exclusive,
            token: FencingToken(token),
        })
    }

    #[test]
    fn two_exclusive_holders_conflict() {
        let mut check = ExclusionCheck::new(Property::MutualExclusion, 3, 1);
        assert!(check.seen(10, (0, HoldId::FIRST), &acquired(1)).is_none());
        let violation = check
            .seen(20, (2, HoldId::FIRST), &acquired(2))
            .expect("two holders");
        assert_eq!(violation.at_ns, 20);
        assert!(violation.message.contains("c2 acquired"), "{violation}");
        assert_eq!(violation.events.len(), 2);
    }

    #[test]
    fn release_call_ends_the_hold() {
        let mut check = ExclusionCheck::new(Property::MutualExclusion, 2, 1);
        check.seen(10, (0, HoldId::FIRST), &acquired(1));
        check.seen(
            11,
            (0, HoldId::FIRST),
            &Seen::Call(CallObservation::Release),
        );
        assert!(check.seen(12, (1, HoldId::FIRST), &acquired(2)).is_none());
    }

    #[test]
    fn each_of_a_client_s_holds_is_released_on_its_own() {
        let mut check = ExclusionCheck::new(Property::MutualExclusion, 2, 1);
        let (outer, inner) = ((0, HoldId::FIRST), (0, HoldId(1)));
        assert!(check.seen(10, outer, &acquired(1)).is_none());
        // Reentrant: the same client's second hold conflicts with nothing.
        assert!(check.seen(11, inner, &acquired(1)).is_none());
        check.seen(12, inner, &Seen::Call(CallObservation::Release));
        // The outer hold is still in force: another client may not acquire.
        let violation = check.seen(13, (1, HoldId::FIRST), &acquired(2));
        assert!(violation
            .expect("c0 still holds")
            .message
            .contains("while c0 held it"));
        check.seen(14, outer, &Seen::Call(CallObservation::Release));
        check.seen(
            15,
            (1, HoldId::FIRST),
            &Seen::Call(CallObservation::Release),
        );
        assert!(check.seen(16, (1, HoldId::FIRST), &acquired(3)).is_none());
    }

    #[test]
    fn shared_holders_coexist_but_not_with_a_writer() {
        let mut check = ExclusionCheck::new(Property::MutualExclusion, 3, 1);
        let shared = Seen::Outcome(Observation::Acquired {
            hold: Hold::Shared,
            token: FencingToken(1),
        });
        assert!(check.seen(1, (0, HoldId::FIRST), &shared).is_none());
        assert!(check.seen(2, (1, HoldId::FIRST), &shared).is_none());
        assert!(check.seen(3, (2, HoldId::FIRST), &acquired(3)).is_some());
    }

    #[test]
    fn leases_are_bounded() {
        let mut check = ExclusionCheck::new(Property::MutualExclusion, 3, 2);
        let lease = Seen::Outcome(Observation::Acquired {
            hold: Hold::Leases(1),
            token: FencingToken(1),
        });
        assert!(check.seen(1, (0, HoldId::FIRST), &lease).is_none());
        assert!(check.seen(2, (1, HoldId::FIRST), &lease).is_none());
        assert!(check.seen(3, (2, HoldId::FIRST), &lease).is_some());
    }

    /// A server where clients 0..3 have live sessions 1..=3 and client 3
    /// none.
    fn server_with_sessions() -> (ZkServer, Vec<Option<SessionId>>) {
        let mut server = ZkServer::new(ServerConfig::default());
        for id in 1..=3 {
            server.open_session(SessionId(id), 1_000).unwrap();
        }
        (
            server,
            vec![
                Some(SessionId(1)),
                Some(SessionId(2)),
                Some(SessionId(3)),
                Some(SessionId(4)),
            ],
        )
    }

    #[test]
    fn fenced_tokens_of_live_grants_must_grow() {
        let (server, sessions) = server_with_sessions();
        let view = View {
            server: &server,
            sessions: &sessions,
        };
        let mut check = FencedCheck::default();
        assert!(check.seen(1, 0, &acquired(5), &view).is_none());
        assert!(check.seen(2, 1, &acquired(6), &view).is_none());
        assert!(
            check.seen(3, 3, &acquired(4), &view).is_none(),
            "a stale grant (dead session) is fenced off"
        );
        let violation = check
            .seen(4, 2, &acquired(4), &view)
            .expect("token went down");
        assert!(violation.message.contains("token 4"), "{violation}");
    }

    #[test]
    fn fenced_writes_with_one_token_from_two_clients() {
        let (server, sessions) = server_with_sessions();
        let view = View {
            server: &server,
            sessions: &sessions,
        };
        let mut check = FencedCheck::default();
        let write = Seen::ResourceWrite {
            token: 7,
            accepted: true,
        };
        assert!(check.seen(1, 0, &write, &view).is_none());
        assert!(check.seen(2, 0, &write, &view).is_none());
        assert!(check.seen(3, 1, &write, &view).is_some());
    }
}
