//! Queue delivery: `exactly_once` and, on a queue, `fifo`.
//!
//! Items are known from the application's offer calls. `exactly_once`: an
//! item taken twice, or taken without ever being offered, breaks it at
//! once; at the end, every acknowledged item must have been taken (an offer
//! that failed may or may not have happened, so its item may be taken at
//! most once). `fifo`: a consumer taking a producer's items out of the
//! order in which they were offered breaks it at once. One check keeps the
//! items for both; the caller says which of the two it judges.

use super::{fmt_time, CallObservation, ClientIndex, Property, Seen, SimNanos, Violation};
use std::collections::{BTreeMap, BTreeSet};
use zk_recipes::Observation;

/// What a `fifo` violation of a queue says (a lock's `fifo` says otherwise):
/// how a diagnosis tells the two kinds apart.
const OUT_OF_ORDER: &str = "out of FIFO order";

/// True if `violation` is a queue consumer taking items out of their
/// producer's order (`fifo` on a queue), not an acquisition out of turn.
pub fn is_queue_order(violation: &Violation) -> bool {
    violation.property == Property::Fifo && violation.message.contains(OUT_OF_ORDER)
}

struct Offer {
    producer: ClientIndex,
    /// Position among the producer's offers.
    index: usize,
    offered_at: SimNanos,
    acknowledged: bool,
    taken: Option<(ClientIndex, SimNanos)>,
}

pub struct QueueCheck {
    /// `exactly_once` is judged: duplicates, phantoms, lost items.
    exactly_once: bool,
    /// `fifo` is judged: per-consumer order.
    fifo: bool,
    pending_offer: Vec<Option<Vec<u8>>>,
    offers_made: Vec<usize>,
    items: BTreeMap<Vec<u8>, Offer>,
    /// consumer -> producer -> index of the last item taken.
    last_taken: Vec<BTreeMap<ClientIndex, usize>>,
}

fn show(item: &[u8]) -> String {
    String::from_utf8_lossy(item).into_owned()
}

impl QueueCheck {
    /// A check of `clients` clients judging whichever of `exactly_once`
    /// and `fifo` `properties` holds (neither: it reports nothing).
    pub fn new(clients: usize, properties: &BTreeSet<Property>) -> QueueCheck {
        QueueCheck {
            exactly_once: properties.contains(&Property::ExactlyOnce),
            fifo: properties.contains(&Property::Fifo),
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

    /// A consumer took `item`: a phantom or a duplicate breaks
    /// `exactly_once`; a first take out of its producer's order, `fifo`.
    fn taken(&mut self, at: SimNanos, consumer: ClientIndex, item: &[u8]) -> Option<Violation> {
        let violation = self.delivery(at, consumer, item);
        if violation.is_some() {
            return violation.filter(|_| self.exactly_once);
        }
        self.order(at, consumer, item).filter(|_| self.fifo)
    }

    /// `exactly_once` at a take: the item was offered and not taken before
    /// (then it is marked taken).
    fn delivery(&mut self, at: SimNanos, consumer: ClientIndex, item: &[u8]) -> Option<Violation> {
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
                invariant: None,
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
                invariant: None,
            });
        }
        offer.taken = Some((consumer, at));
        None
    }

    /// `fifo` at a first take of an offered item: the consumer took none of
    /// the producer's later offers before.
    fn order(&mut self, at: SimNanos, consumer: ClientIndex, item: &[u8]) -> Option<Violation> {
        let offer = self.items.get(item)?;
        let (producer, index) = (offer.producer, offer.index);
        let last = self.last_taken[consumer].insert(producer, index);
        let later = last.filter(|last| *last > index)?;
        Some(Violation {
            property: Property::Fifo,
            at_ns: at,
            message: format!(
                "c{consumer} took c{producer}'s offer #{index} after its offer #{later}: {OUT_OF_ORDER}"
            ),
            events: vec![format!("{} c{consumer}: took {:?}", fmt_time(at), show(item))],
            diagnosis: None,
            invariant: None,
        })
    }

    /// Acknowledged items never taken (judged under `exactly_once` only).
    pub fn finish(&self, at: SimNanos) -> Option<Violation> {
        if !self.exactly_once {
            return None;
        }
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
            invariant: None,
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

    fn judging(clients: usize, properties: &[Property]) -> QueueCheck {
        QueueCheck::new(clients, &properties.iter().copied().collect())
    }

    fn both(clients: usize) -> QueueCheck {
        judging(clients, &[Property::ExactlyOnce, Property::Fifo])
    }

    /// c0 offers a then b; c1 takes b then a.
    fn reversed(check: &mut QueueCheck) -> Option<Violation> {
        offer(check, 1, 0, "a");
        offer(check, 2, 0, "b");
        assert!(take(check, 3, 1, "b").is_none());
        take(check, 4, 1, "a")
    }

    #[test]
    fn duplicate_delivery_is_caught() {
        let mut check = both(3);
        offer(&mut check, 1, 0, "a");
        assert!(take(&mut check, 2, 1, "a").is_none());
        let violation = take(&mut check, 3, 2, "a").expect("a twice");
        assert_eq!(violation.property, Property::ExactlyOnce);
        assert!(!is_queue_order(&violation));
    }

    #[test]
    fn duplicate_delivery_is_not_a_fifo_violation() {
        let mut check = judging(3, &[Property::Fifo]);
        offer(&mut check, 1, 0, "a");
        assert!(take(&mut check, 2, 1, "a").is_none());
        assert!(take(&mut check, 3, 2, "a").is_none());
        assert!(take(&mut check, 4, 2, "phantom").is_none());
    }

    #[test]
    fn lost_item_is_caught_at_the_end() {
        let mut check = both(2);
        offer(&mut check, 1, 0, "a");
        offer(&mut check, 2, 0, "b");
        take(&mut check, 3, 1, "a");
        let violation = check.finish(4).expect("b is lost");
        assert!(violation.events[0].contains("\"b\""), "{violation}");
    }

    #[test]
    fn lost_item_is_not_a_fifo_violation() {
        let mut check = judging(2, &[Property::Fifo]);
        offer(&mut check, 1, 0, "a");
        assert!(check.finish(2).is_none());
    }

    #[test]
    fn out_of_order_take_breaks_fifo() {
        let violation = reversed(&mut both(2)).expect("a after b");
        assert_eq!(violation.property, Property::Fifo);
        assert!(is_queue_order(&violation), "{violation}");
    }

    #[test]
    fn out_of_order_take_keeps_exactly_once() {
        let mut check = judging(2, &[Property::ExactlyOnce]);
        assert!(reversed(&mut check).is_none());
        assert!(check.finish(5).is_none());
    }

    #[test]
    fn two_consumers_each_in_order_keep_fifo() {
        let mut check = both(3);
        offer(&mut check, 1, 0, "a");
        offer(&mut check, 2, 0, "b");
        offer(&mut check, 3, 0, "c");
        assert!(take(&mut check, 4, 2, "b").is_none());
        assert!(take(&mut check, 5, 1, "a").is_none());
        assert!(take(&mut check, 6, 1, "c").is_none());
        assert!(check.finish(7).is_none());
    }

    #[test]
    fn failed_offer_may_be_missing() {
        let mut check = both(2);
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
