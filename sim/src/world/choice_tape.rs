//! The choice tape: where the simulated world reads its choices from when
//! it is explored or replayed instead of drawn from the seed.
//!
//! A run of an explored world is a function of its choice string: at every
//! choice point (which client's request the server applies next, when
//! several wait; which fault, if any, strikes a request while the fault
//! budget lasts; how long a workload's hold, think, work or arrival lasts,
//! among its range's [`DurationPoints`]; which of its acquire calls a
//! client makes) the world asks the tape. The tape answers from its script
//! while it lasts and with the default (0) after it, and logs every point
//! with its number of alternatives, so the explorer can backtrack. A
//! drawing tape ([`Tape::drawing`]) answers past its script with a uniform
//! random alternative instead (the random baseline PCT is measured
//! against).
//!
//! The explorer hands a tape to the next run on this thread ([`install`]);
//! the world takes it when it is built and gives it back when it finishes
//! ([`give_back`]), where the explorer collects it ([`collect`]). Without
//! a tape the world draws everything from the seed, as it always did.

pub use super::fault_allowance::FaultAllowance;
use std::cell::RefCell;
use std::collections::BTreeMap;

/// What a choice point decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChoiceKind {
    /// Which client's oldest waiting request the server applies next
    /// (alternatives in arrival order: 0 is the request that came first).
    Order,
    /// What happens to the request about to be applied (see
    /// [`FaultChoice`]).
    Fault,
    /// How long a workload's duration lasts: one of its range's points
    /// (see [`DurationPoints`]; 0 is the range's minimum).
    Duration,
    /// Which of several alternatives a workload picks (the acquire call
    /// of a recipe with more than one).
    Pick,
    /// What fault, if any, strikes a client between requests, as its
    /// workload starts a drawn duration (see [`StrikeChoice`]).
    Strike,
    /// The order of an ensemble's servers in a client's host list, chosen
    /// at its first connection attempt (0: servers 0, 1, 2, ...); its
    /// attempts go round the list.
    Server,
    /// What ensemble fault, if any, strikes at a strike point (see
    /// [`ServerFaultChoice`](super::server_fault_choices::ServerFaultChoice)).
    ServerFault,
}

/// What strikes a client as its workload starts a drawn duration (a
/// hold, a think time): between requests, where a fault at a request
/// cannot reach (a holder makes no request while it holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrikeChoice {
    None,
    /// The connection drops and the client reconnects at once.
    Blip,
    /// The connection drops and stays down for twice the session timeout
    /// (a partition of the client longer than its session: the server
    /// expires it meanwhile).
    Partition,
    /// The connection goes silent for twice the session timeout (a black
    /// hole: the client hears of it only at its read timeout, two thirds
    /// of the session timeout later, while the server's session timer
    /// runs from the last byte it heard).
    Silent,
    /// The server expires the session now.
    Expire,
    /// The client process stops for twice the session timeout (a GC
    /// pause: the session expires while it is frozen).
    Pause,
    /// The connection drops and stays down for half the session timeout
    /// (a partition shorter than the session: the client reconnects into
    /// the same session, and what it asked for meanwhile waits or fails
    /// as its client library says).
    Outage,
}

impl StrikeChoice {
    /// The strikes a `connection-loss` budget pays for, in the order a
    /// tape numbers them (the outage last, so that the older strikes kept
    /// their numbers when it came).
    pub const CONNECTION_LOSSES: [StrikeChoice; 4] = [
        StrikeChoice::Blip,
        StrikeChoice::Partition,
        StrikeChoice::Silent,
        StrikeChoice::Outage,
    ];

    /// What may strike between requests while `left` lasts, in the order
    /// a tape numbers the alternatives.
    pub fn offered(left: &FaultAllowance) -> Vec<StrikeChoice> {
        let mut offered = vec![StrikeChoice::None];
        if left.connection_loss > 0 {
            offered.extend(StrikeChoice::CONNECTION_LOSSES);
        }
        if left.expiry > 0 {
            offered.push(StrikeChoice::Expire);
        }
        if left.pause > 0 {
            offered.push(StrikeChoice::Pause);
        }
        offered
    }

    /// Takes this strike out of what is `left`.
    pub fn spend(self, left: &mut FaultAllowance) {
        match self {
            StrikeChoice::Blip
            | StrikeChoice::Partition
            | StrikeChoice::Silent
            | StrikeChoice::Outage => left.connection_loss -= 1,
            StrikeChoice::Expire => left.expiry -= 1,
            StrikeChoice::Pause => left.pause -= 1,
            StrikeChoice::None => {}
        }
    }
}

/// How many points of a duration's range an explored world tries: the
/// range's ends and evenly spaced points between them (`1`: the minimum
/// only; `2`: both ends; `3`: the ends and the middle), never more than
/// the range has milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DurationPoints(pub u32);

impl DurationPoints {
    /// The most points a duration may take (each doubles the search per
    /// draw at 2, so a handful is already a lot).
    pub const MAX: u32 = 5;

    /// The values a draw in `min..=max` chooses among, smallest first.
    pub fn values(self, min: u64, max: u64) -> Vec<u64> {
        let span = max.saturating_sub(min);
        let count = u64::from(self.0.max(1)).min(span + 1);
        if count == 1 {
            return vec![min];
        }
        (0..count).map(|i| min + span * i / (count - 1)).collect()
    }
}

impl Default for DurationPoints {
    /// Both ends of every range.
    fn default() -> DurationPoints {
        DurationPoints(2)
    }
}

/// One choice point of a run: its kind, how many alternatives it had, and
/// which one the run took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChoicePoint {
    pub kind: ChoiceKind,
    pub alternatives: u32,
    pub taken: u32,
}

impl ChoicePoint {
    /// A point that leaves the default order (a delay, in PCT's sense).
    pub fn is_delay(&self) -> bool {
        self.kind == ChoiceKind::Order && self.taken != 0
    }
}

/// What strikes a request the server is about to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultChoice {
    None,
    /// The request is lost and the connection drops (connection loss
    /// before apply).
    LoseBeforeApply,
    /// The server applies it, its reply is lost, the connection drops.
    LoseAfterApply,
    /// The server expires the session instead of applying it.
    Expire,
}

/// The visited states of one search: a state key (with the faults still
/// allowed) and the most delays still allowed when it was seen.
pub type Memo = BTreeMap<(u64, FaultAllowance), u32>;

/// One run's choices: the script it follows, the points it met.
#[derive(Debug, Default)]
pub struct Tape {
    script: Vec<u32>,
    /// Every choice point met so far, in order.
    pub log: Vec<ChoicePoint>,
    /// Faults still allowed.
    left: FaultAllowance,
    /// Most delays (order choices other than the default) the search allows
    /// (for the memo; None: unbounded).
    max_delays: Option<u32>,
    delays: u32,
    /// Visited states; None: no pruning (replays).
    memo: Option<Memo>,
    /// The run stopped at a state the search had visited.
    pub pruned: bool,
    /// A scripted choice had no such alternative (the choice string does
    /// not fit this world: another recipe, variant or budget).
    pub misfit: Option<usize>,
    /// Past the script: draw uniformly from this generator instead of
    /// taking the default.
    draw: Option<super::split_mix::SplitMix>,
    /// The points of a duration's range the world tries.
    durations: DurationPoints,
}

impl Tape {
    /// A tape that follows `script` (then takes defaults) with `faults` to
    /// spend, durations at both ends of their ranges; no pruning.
    pub fn new(script: Vec<u32>, faults: FaultAllowance) -> Tape {
        Tape {
            script,
            left: faults,
            durations: DurationPoints::default(),
            ..Tape::default()
        }
    }

    /// Tries `points` of each duration's range instead of both ends.
    pub fn with_durations(mut self, points: DurationPoints) -> Tape {
        self.durations = points;
        self
    }

    /// Prunes at states in `memo` (seen with at least as many delays left
    /// under `max_delays`), adding the states it meets past its script.
    pub fn with_memo(mut self, memo: Memo, max_delays: Option<u32>) -> Tape {
        self.memo = Some(memo);
        self.max_delays = max_delays;
        self
    }

    /// Past its script, takes a uniformly drawn alternative at every point
    /// (a generator seeded with `seed`) instead of the default.
    pub fn drawing(mut self, seed: u64) -> Tape {
        self.draw = Some(super::split_mix::SplitMix::new(seed));
        self
    }

    /// The memo back from a finished run.
    pub fn take_memo(&mut self) -> Memo {
        self.memo.take().unwrap_or_default()
    }

    /// The choices taken, as a choice string's numbers (trailing defaults
    /// dropped: they are what a shorter script gives anyway).
    pub fn taken(&self) -> Vec<u32> {
        let mut taken: Vec<u32> = self.log.iter().map(|point| point.taken).collect();
        while taken.last() == Some(&0) {
            taken.pop();
        }
        taken
    }

    /// Decides a point with `alternatives` (at least 2).
    fn choose(&mut self, kind: ChoiceKind, alternatives: u32) -> u32 {
        let index = self.log.len();
        let mut taken = match (self.script.get(index), self.draw.as_mut()) {
            (Some(&scripted), _) => scripted,
            (None, Some(draw)) => draw.below(alternatives),
            (None, None) => 0,
        };
        if taken >= alternatives {
            self.misfit.get_or_insert(index);
            taken = 0;
        }
        let point = ChoicePoint {
            kind,
            alternatives,
            taken,
        };
        self.delays += u32::from(point.is_delay());
        self.log.push(point);
        taken
    }

    /// Which of `waiting` clients' requests (in arrival order) applies next.
    pub fn order(&mut self, waiting: usize) -> usize {
        self.index(ChoiceKind::Order, waiting)
    }

    /// How long a duration drawn in `min..=max` ms lasts: one of the
    /// range's points (no choice point when it has one).
    pub fn duration_ms(&mut self, min: u64, max: u64) -> u64 {
        let values = self.durations.values(min, max);
        self.offer(ChoiceKind::Duration, &values)
    }

    /// Which of `alternatives` a workload picks (no choice point for one).
    pub fn pick(&mut self, alternatives: usize) -> usize {
        self.index(ChoiceKind::Pick, alternatives)
    }

    /// One of `alternatives` (0, the default, with no choice point when
    /// there are fewer than 2).
    fn index(&mut self, kind: ChoiceKind, alternatives: usize) -> usize {
        match u32::try_from(alternatives) {
            Ok(n) if n > 1 => self.choose(kind, n) as usize,
            _ => 0,
        }
    }

    /// One of `offered` (at least one; its first is the default).
    fn offer<T: Copy>(&mut self, kind: ChoiceKind, offered: &[T]) -> T {
        offered[self.index(kind, offered.len())]
    }

    /// What strikes the request about to be applied, within the faults
    /// still allowed (no point at all once none is).
    pub fn fault(&mut self) -> FaultChoice {
        let mut offered = vec![FaultChoice::None];
        if self.left.connection_loss > 0 {
            offered.extend([FaultChoice::LoseBeforeApply, FaultChoice::LoseAfterApply]);
        }
        if self.left.expiry > 0 {
            offered.push(FaultChoice::Expire);
        }
        let choice = self.offer(ChoiceKind::Fault, &offered);
        match choice {
            FaultChoice::LoseBeforeApply | FaultChoice::LoseAfterApply => {
                self.left.connection_loss -= 1
            }
            FaultChoice::Expire => self.left.expiry -= 1,
            FaultChoice::None => {}
        }
        choice
    }

    /// What strikes the client between requests, as its workload starts a
    /// drawn duration, within the faults still allowed (no point at all
    /// once none is).
    pub fn strike(&mut self) -> StrikeChoice {
        let offered = StrikeChoice::offered(&self.left);
        let choice = self.offer(ChoiceKind::Strike, &offered);
        choice.spend(&mut self.left);
        choice
    }

    /// Which of `orders` host orders a client has (no choice point for
    /// one).
    pub fn server(&mut self, orders: usize) -> usize {
        self.index(ChoiceKind::Server, orders)
    }

    /// What ensemble fault strikes at a strike point, on `servers` servers
    /// of which `leader` leads, within the faults still allowed (no point
    /// at all once none is).
    pub fn server_fault(
        &mut self,
        servers: usize,
        leader: usize,
    ) -> super::server_fault_choices::ServerFaultChoice {
        let offered =
            super::server_fault_choices::ServerFaultChoice::offered(&self.left, servers, leader);
        let choice = self.offer(ChoiceKind::ServerFault, &offered);
        choice.spend(&mut self.left);
        choice
    }

    /// True when the next choice point is past the script and the memo is
    /// on: the world should compute its state key ([`Tape::visit`]).
    pub fn wants_key(&self) -> bool {
        self.memo.is_some() && self.log.len() >= self.script.len()
    }

    /// Records a state the run reached; true if the search saw it before
    /// with at least as many delays left (the run can stop: everything
    /// after it has been or will be explored from there), and the run is
    /// then marked `pruned`.
    pub fn visit(&mut self, key: u64) -> bool {
        let delays_left = match self.max_delays {
            Some(max) => max.saturating_sub(self.delays),
            None => u32::MAX,
        };
        let Some(memo) = self.memo.as_mut() else {
            return false;
        };
        let key = (key, self.left);
        match memo.get(&key) {
            Some(&seen) if seen >= delays_left => {
                self.pruned = true;
                true
            }
            _ => {
                memo.insert(key, delays_left);
                false
            }
        }
    }
}

thread_local! {
    static INSTALLED: RefCell<Option<Tape>> = const { RefCell::new(None) };
}

/// Hands `tape` to the next run started on this thread.
pub fn install(tape: Tape) {
    INSTALLED.with(|slot| *slot.borrow_mut() = Some(tape));
}

/// The tape installed for this run, if any (the world, when it is built).
pub fn take() -> Option<Tape> {
    INSTALLED.with(|slot| slot.borrow_mut().take())
}

/// A finished run's tape, back for the explorer (the world, at its end).
pub fn give_back(tape: Tape) {
    install(tape);
}

/// The tape of the run that just finished (the explorer).
pub fn collect() -> Option<Tape> {
    take()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_script_then_takes_defaults() {
        let mut tape = Tape::new(vec![1, 2], FaultAllowance::default());
        assert_eq!(tape.order(3), 1);
        assert_eq!(tape.order(1), 0, "one waiting request is no choice");
        assert_eq!(tape.order(3), 2);
        assert_eq!(tape.order(2), 0);
        assert_eq!(tape.log.len(), 3);
        assert_eq!(tape.taken(), vec![1, 2]);
        assert_eq!(tape.misfit, None);
    }

    #[test]
    fn faults_are_offered_while_the_budget_lasts() {
        let budget = FaultAllowance {
            connection_loss: 1,
            ..FaultAllowance::default()
        };
        let mut tape = Tape::new(vec![2], budget);
        assert_eq!(tape.fault(), FaultChoice::LoseAfterApply);
        assert_eq!(tape.log[0].alternatives, 3);
        assert_eq!(tape.fault(), FaultChoice::None, "the budget is spent");
        assert_eq!(
            tape.strike(),
            StrikeChoice::None,
            "spent between requests too"
        );
        assert_eq!(tape.log.len(), 1);
    }

    #[test]
    fn faults_between_requests_share_the_budget() {
        let budget = FaultAllowance {
            connection_loss: 1,
            expiry: 1,
            pause: 1,
            ..FaultAllowance::default()
        };
        let mut tape = Tape::new(vec![2, 2], budget);
        assert_eq!(tape.strike(), StrikeChoice::Partition);
        assert_eq!(
            tape.log[0].alternatives, 7,
            "none, blip, partition, silent, outage, expire, pause"
        );
        assert_eq!(tape.log[0].kind, ChoiceKind::Strike);
        assert_eq!(
            tape.strike(),
            StrikeChoice::Pause,
            "no connection loss left"
        );
        assert_eq!(tape.log[1].alternatives, 3);
        assert_eq!(
            tape.fault(),
            FaultChoice::None,
            "the request faults: only an expiry left"
        );
        assert_eq!(tape.log[2].alternatives, 2);
    }

    #[test]
    fn an_outage_is_offered_last_of_the_connection_losses_and_spends_one() {
        let budget = FaultAllowance {
            connection_loss: 1,
            expiry: 1,
            ..FaultAllowance::default()
        };
        let mut tape = Tape::new(vec![4, 1], budget);
        assert_eq!(tape.strike(), StrikeChoice::Outage);
        assert_eq!(tape.strike(), StrikeChoice::Expire, "none, expire left");
        assert_eq!(tape.strike(), StrikeChoice::None, "the budget is spent");
    }

    #[test]
    fn a_drawing_tape_draws_past_its_script_the_same_for_the_same_seed() {
        let draws = |seed| {
            let mut tape = Tape::new(vec![2], FaultAllowance::default()).drawing(seed);
            let taken: Vec<usize> = (0..12).map(|_| tape.order(3)).collect();
            taken
        };
        let taken = draws(5);
        assert_eq!(taken[0], 2, "the script first");
        assert_eq!(taken, draws(5));
        assert_ne!(taken, draws(6));
        assert!(taken.iter().all(|&t| t < 3));
        assert!(taken[1..].iter().any(|&t| t != 0), "not only defaults");
    }

    #[test]
    fn a_duration_takes_its_ranges_points() {
        assert_eq!(DurationPoints(2).values(1, 20), vec![1, 20]);
        assert_eq!(DurationPoints(3).values(0, 10), vec![0, 5, 10]);
        assert_eq!(DurationPoints(1).values(4, 9), vec![4]);
        assert_eq!(
            DurationPoints(5).values(3, 4),
            vec![3, 4],
            "no more than the range has"
        );
        let mut tape = Tape::new(vec![1, 0], FaultAllowance::default());
        assert_eq!(tape.duration_ms(1, 20), 20);
        assert_eq!(tape.duration_ms(7, 7), 7, "one value is no choice");
        assert_eq!(tape.duration_ms(1, 20), 1);
        assert_eq!(tape.log.len(), 2);
        assert_eq!(tape.log[0].kind, ChoiceKind::Duration);
        assert!(!tape.log[0].is_delay(), "a duration is no delay");
        let mut picking = Tape::new(vec![2], FaultAllowance::default());
        assert_eq!(picking.pick(3), 2);
        assert_eq!(picking.pick(1), 0);
        assert_eq!(picking.log[0].kind, ChoiceKind::Pick);
    }

    #[test]
    fn a_choice_out_of_range_is_a_misfit() {
        let mut tape = Tape::new(vec![0, 5], FaultAllowance::default());
        tape.order(2);
        assert_eq!(tape.order(2), 0);
        assert_eq!(tape.misfit, Some(1));
    }

    #[test]
    fn the_memo_prunes_a_state_seen_with_as_many_delays_left() {
        let mut tape = Tape::new(vec![], FaultAllowance::default()).with_memo(Memo::new(), Some(1));
        assert!(!tape.visit(7), "the first visit");
        tape.order(2);
        assert!(tape.visit(7), "seen before, no fewer delays left");
        let memo = tape.take_memo();
        let mut delayed = Tape::new(vec![1], FaultAllowance::default()).with_memo(memo, Some(1));
        delayed.order(2);
        delayed.order(2);
        assert!(
            delayed.visit(7),
            "fewer delays left than at the first visit"
        );
        assert!(!delayed.visit(8));
    }
}
