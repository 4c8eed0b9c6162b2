//! The client's host list: which server of the ensemble a connection
//! attempt lands on, going round the servers in an order shuffled once
//! (drawn from the seed, or chosen by the tape in an explored run).

use super::super::shared::{trace, Shared, SimRecipe};
use rand::seq::SliceRandom;

impl<R: SimRecipe> Shared<R> {
    /// The server a connection attempt lands on: the only one, or the next
    /// of the client's host list, which both client libraries go round in
    /// an order they shuffle once (Java's StaticHostProvider, the crate's
    /// `IterableEndpoints::reset`): drawn from the seed at the client's
    /// first attempt, or in an explored run chosen by the tape.
    pub(super) fn pick_server(&mut self, client: usize) -> usize {
        let servers = self.ensemble.servers();
        if servers == 1 {
            return 0;
        }
        if self.host_lists[client].order.is_empty() {
            let (order, choice) = match self.chooser.as_mut() {
                Some(tape) => (host_order(servers, tape.server(2 * servers)), "choice: "),
                None => {
                    let mut order: Vec<usize> = (0..servers).collect();
                    order.shuffle(&mut self.rng.placement);
                    (order, "")
                }
            };
            self.host_lists[client].order = order;
            let listed: Vec<String> = self.host_lists[client]
                .order
                .iter()
                .map(usize::to_string)
                .collect();
            trace!(
                self,
                Some(client),
                Send,
                "{choice}the client's host list goes round servers {}",
                listed.join(", ")
            );
        }
        let hosts = &mut self.host_lists[client];
        let server = hosts.order[hosts.next % servers];
        hosts.next = (hosts.next + 1) % servers;
        trace!(
            self,
            Some(client),
            Send,
            "the attempt goes to server {server}, the next of its host list"
        );
        server
    }
}

/// The `choice`-th of an ensemble's host orders an explored client may
/// have (`2 × servers` of them: each server first, then round the ring
/// upwards or downwards; for 3 servers every order there is).
fn host_order(servers: usize, choice: usize) -> Vec<usize> {
    let (first, downwards) = (choice / 2, choice % 2 == 1);
    (0..servers)
        .map(|i| match downwards {
            false => (first + i) % servers,
            true => (first + servers - i) % servers,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::host_order;
    use std::collections::BTreeSet;

    #[test]
    fn the_host_orders_of_three_servers_are_every_order_there_is() {
        let orders: BTreeSet<Vec<usize>> = (0..6).map(|choice| host_order(3, choice)).collect();
        assert_eq!(orders.len(), 6);
        assert_eq!(host_order(3, 0), vec![0, 1, 2], "the default");
        assert_eq!(host_order(3, 3), vec![1, 0, 2], "server 1 first, downwards");
        let five: BTreeSet<Vec<usize>> = (0..10).map(|choice| host_order(5, choice)).collect();
        assert_eq!(five.len(), 10, "five servers: each first, either way round");
    }
}
