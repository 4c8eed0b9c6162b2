//! Exactly-once, in-order queue delivery.
//!
//! Items are known from the application's offer calls. An item taken twice,
//! or taken without ever being offered, breaks the property at once; so
//! does a consumer taking a producer's items out of the order in which they
//! were offered. At the end, every acknowledged item must have been taken
//! (an offer that failed may or may not have happened, so its item may be
//! taken at most once).

use super::{fmt_time, CallObservation, ClientIndex, Property, Seen, SimNanos, Violation};
use std::collections::BTreeMap;
use zk_recipes::Observation;

struct Offer {
    producer: ClientIndex,
    /// Position among the producer's offers.
    index: usize,
    offered_at: SimNanos,
    acknowledged: bool,
    taken: Option<(ClientIndex, SimNanos)>,
}

pub struct QueueCheck {
    pending_offer: Vec<Option<Vec<u8>>>,
    offers_made: Vec<usize>,
    items: BTreeMap<Vec<u8>, Offer>,
    /// consumer -> producer -> (index, item) of the last item taken.
    last_taken: Vec<BTreeMap<ClientIndex, usize>>,
}

fn show(item: &[u8]) -> String {
    String::from_utf8_lossy(item).into_owned()
}

impl QueueCheck {
    pub fn new(clients: usize) -> QueueCheck {
        QueueCheck {
            pending_offer: vec![None; clients],
            offers_made: vec![0; clients],
            items: BTreeMap::new(),
            last_taken: vec![BTreeMap::new(); clients],
        }
    }

    pub fn seen(&mut self, at: SimNanos, client: ClientIndex, seen: &Seen) -> Option<Violation> {
        match seen {
            Seen::Call(CallObservation::Offer { item }) => {
                let index = self.offers_made[client];
                self.offers_made[client] += 1;
                self.pending_offer[client] = Some(item.clone());
                self.items.entry(item.clone()).or_insert(Offer {
                    producer: client,
                    index,
                    offered_at: at,
                    acknowledged: false,
                    taken: None,
                });
                None
            }
            Seen::Outcome(Observation::Offered { .. }) => {
                if let Some(item) = self.pending_offer[client].take() {
                    if let Some(offer) = self.items.get_mut(&item) {
                        offer.acknowledged = true;
                    }
                }
                None
            }
            Seen::Outcome(Observation::Failed { .. }) => {
                self.pending_offer[client] = None;
                None
            }
            Seen::Outcome(Observation::Taken { item }) => self.taken(at, client, item),
            _ => None,
        }
    }

    fn taken(&mut self, at: SimNanos, consumer: ClientIndex, item: &[u8]) -> Option<Violation> {
        let Some(offer) = self.items.get_mut(item) else {
            return Some(Violation {
                property: Property::ExactlyOnce,
                at_ns: at,
                message: format!("c{consumer} took item {:?} that nobody offered", show(item)),
                events: vec![format!(
                    "{} c{consumer}: took {:?}",
                    fmt_time(at),
                    show(item)
                )],
                diagnosis: None,
            });
        };
        if let Some((first, when)) = offer.taken {
            return Some(Violation {
                property: Property::ExactlyOnce,
                at_ns: at,
                message: format!("item {:?} delivered twice", show(item)),
                events: vec![
                    format!(
                        "{} c{}: offered {:?}",
                        fmt_time(offer.offered_at),
                        offer.producer,
                        show(item)
                    ),
                    format!("{} c{first}: took {:?}", fmt_time(when), show(item)),
                    format!("{} c{consumer}: took {:?} again", fmt_time(at), show(item)),
                ],
                diagnosis: None,
            });
        }
        offer.taken = Some((consumer, at));
        let (producer, index) = (offer.producer, offer.index);
        let last = self.last_taken[consumer].insert(producer, index);
        let earlier = last.filter(|last| *last > index)?;
        Some(Violation {
            property: Property::ExactlyOnce,
            at_ns: at,
            message: format!(
                "c{consumer} took c{producer}'s offer #{index} after its offer #{earlier}: out of FIFO order"
            ),
            events: vec![format!("{} c{consumer}: took {:?}", fmt_time(at), show(item))],
            diagnosis: None,
        })
    }

    /// Acknowledged items never taken.
    pub fn finish(&self, at: SimNanos) -> Option<Violation> {
        let lost: Vec<String> = self
            .items
            .iter()
            .filter(|(_, offer)| offer.acknowledged && offer.taken.is_none())
            .map(|(item, offer)| {
                format!(
                    "{} c{}: offered {:?}, never taken",
                    fmt_time(offer.offered_at),
                    offer.producer,
                    show(item)
                )
            })
            .collect();
        if lost.is_empty() {
            return None;
        }
        Some(Violation {
            property: Property::ExactlyOnce,
            at_ns: at,
            message: format!("{} acknowledged item(s) never delivered", lost.len()),
            events: lost,
            diagnosis: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(check: &mut QueueCheck, at: SimNanos, client: ClientIndex, item: &str) {
        check.seen(
            at,
            client,
            &Seen::Call(CallObservation::Offer { item: item.into() }),
        );
        check.seen(
            at,
            client,
            &Seen::Outcome(Observation::Offered { item: Vec::new() }),
        );
    }

    fn take(
        check: &mut QueueCheck,
        at: SimNanos,
        client: ClientIndex,
        item: &str,
    ) -> Option<Violation> {
        check.seen(
            at,
            client,
            &Seen::Outcome(Observation::Taken { item: item.into() }),
        )
    }

    #[test]
    fn duplicate_delivery_is_caught() {
        let mut check = QueueCheck::new(3);
        offer(&mut check, 1, 0, "a");
        assert!(take(&mut check, 2, 1, "a").is_none());
        assert!(take(&mut check, 3, 2, "a").is_some());
    }

    #[test]
    fn lost_item_is_caught_at_the_end() {
        let mut check = QueueCheck::new(2);
        offer(&mut check, 1, 0, "a");
        offer(&mut check, 2, 0, "b");
        take(&mut check, 3, 1, "a");
        let violation = check.finish(4).expect("b is lost");
        assert!(violation.events[0].contains("\"b\""), "{violation}");
    }

    #[test]
    fn out_of_order_take_is_caught() {
        let mut check = QueueCheck::new(2);
        offer(&mut check, 1, 0, "a");
        offer(&mut check, 2, 0, "b");
        assert!(take(&mut check, 3, 1, "b").is_none());
        assert!(take(&mut check, 4, 1, "a").is_some());
    }

    #[test]
    fn failed_offer_may_be_missing() {
        let mut check = QueueCheck::new(2);
        check.seen(
            1,
            0,
            &Seen::Call(CallObservation::Offer {
                item: b"a".to_vec(),
            }),
        );
        check.seen(
            2,
            0,
            &Seen::Outcome(Observation::Failed {
                reason: "ConnectionLoss".into(),
            }),
        );
        assert!(check.finish(3).is_none());
    }
}
