//! Mutual exclusion (plain and fenced) and one leader at a time.
//!
//! Plain: a client holds from its `Acquired` outcome until it calls release
//! or learns it lost the hold; two conflicting holds at once break it.
//! Fenced: what a shared resource that rejects stale tokens sees; the
//! tokens of live grants (the grantee's session still alive on the server)
//! must grow strictly, and two clients must never get writes accepted with
//! the same token. A grant to a client whose session already ended (it was
//! paused while the answer waited for it) is stale by definition: the
//! resource fences it off, so it does not count.

use super::{fmt_time, CallObservation, ClientIndex, Property, Seen, SimNanos, View, Violation};
use zk_recipes::{FencingToken, Hold, Observation};

#[derive(Clone, Copy, Debug)]
struct Holding {
    hold: Hold,
    token: FencingToken,
    since: SimNanos,
}

/// Never two conflicting holders.
pub struct ExclusionCheck {
    property: Property,
    holders: Vec<Option<Holding>>,
    max_leases: u32,
}

impl ExclusionCheck {
    pub fn new(property: Property, clients: usize, max_leases: u32) -> ExclusionCheck {
        ExclusionCheck {
            property,
            holders: vec![None; clients],
            max_leases,
        }
    }

    pub fn seen(&mut self, at: SimNanos, client: ClientIndex, seen: &Seen) -> Option<Violation> {
        match seen {
            Seen::Outcome(Observation::Acquired { hold, token }) => {
                let violation = self.conflict(at, client, *hold, *token);
                self.holders[client] = Some(Holding {
                    hold: *hold,
                    token: *token,
                    since: at,
                });
                violation
            }
            Seen::Call(CallObservation::Release)
            | Seen::Outcome(Observation::Released | Observation::Lost) => {
                self.holders[client] = None;
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
            .enumerate()
            .filter(|(other, _)| *other != client)
            .filter_map(|(other, holding)| holding.map(|h| (other, h)))
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
        assert!(check.seen(10, 0, &acquired(1)).is_none());
        let violation = check.seen(20, 2, &acquired(2)).expect("two holders");
        assert_eq!(violation.at_ns, 20);
        assert!(violation.message.contains("c2 acquired"), "{violation}");
        assert_eq!(violation.events.len(), 2);
    }

    #[test]
    fn release_call_ends_the_hold() {
        let mut check = ExclusionCheck::new(Property::MutualExclusion, 2, 1);
        check.seen(10, 0, &acquired(1));
        check.seen(11, 0, &Seen::Call(CallObservation::Release));
        assert!(check.seen(12, 1, &acquired(2)).is_none());
    }

    #[test]
    fn shared_holders_coexist_but_not_with_a_writer() {
        let mut check = ExclusionCheck::new(Property::MutualExclusion, 3, 1);
        let shared = Seen::Outcome(Observation::Acquired {
            hold: Hold::Shared,
            token: FencingToken(1),
        });
        assert!(check.seen(1, 0, &shared).is_none());
        assert!(check.seen(2, 1, &shared).is_none());
        assert!(check.seen(3, 2, &acquired(3)).is_some());
    }

    #[test]
    fn leases_are_bounded() {
        let mut check = ExclusionCheck::new(Property::MutualExclusion, 3, 2);
        let lease = Seen::Outcome(Observation::Acquired {
            hold: Hold::Leases(1),
            token: FencingToken(1),
        });
        assert!(check.seen(1, 0, &lease).is_none());
        assert!(check.seen(2, 1, &lease).is_none());
        assert!(check.seen(3, 2, &lease).is_some());
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
