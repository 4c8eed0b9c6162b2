//! The draw tape: every word of randomness a seeded run draws, stream by
//! stream, so that a seed's run can be written out, read back and replayed
//! exactly, or changed word by word (any word is a legal draw, so a changed
//! tape is always some run of the same world).
//!
//! A world draws from named streams (`net` for latencies, `faults` for
//! request faults, `workload_0` for client 0's durations, ...), each seeded
//! from the run's seed as it always was: without a tape a [`Stream`] is its
//! seeded generator and nothing else, so a sweep draws what it drew before.
//! With a [`DrawTape`] installed for the next run ([`install`]), each stream
//! answers first from the tape's words for it, in order, and from its seeded
//! generator after them; with recording on, it also logs every word it
//! answers, and the run hands back what it drew ([`collect`]).
//!
//! What the seed decides besides the streams (a tape names its seed for
//! them): madsim's order among ready tasks and, for async recipes, the
//! branch a `select!` without `biased;` tries first and a `HashMap`'s keys.

use rand::rngs::SmallRng;
use rand::RngCore;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The words of one run, per stream, and the seed for what is not a stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrawTape {
    pub seed: u64,
    pub streams: BTreeMap<String, Vec<u64>>,
}

impl DrawTape {
    /// A tape of no words: a run of it is seed `seed`'s run.
    pub fn empty(seed: u64) -> DrawTape {
        DrawTape {
            seed,
            streams: BTreeMap::new(),
        }
    }

    /// How many words the tape holds over all its streams.
    pub fn words(&self) -> usize {
        self.streams.values().map(Vec::len).sum()
    }
}

/// The streams a world draws from, by name, and the purpose each serves.
/// `workload_N` (client N's durations and picks) is the one family.
pub const STREAMS: [(&str, &str); 16] = [
    ("net", "message latencies"),
    ("child_order", "the order of getChildren results"),
    (
        "ephemeral_order",
        "the order a closing session's ephemerals go",
    ),
    ("lag", "followers' apply lags"),
    ("placement", "the server each connection attempt lands on"),
    ("faults", "faults at requests"),
    ("ids", "session ids"),
    ("delays", "reconnect and new-session delays"),
    ("choices", "choices timed faults make"),
    ("detect", "when a partitioned server notices"),
    ("election", "how long each election takes"),
    (
        "swarm",
        "which fault kinds are on and their rates (swarm mode)",
    ),
    ("timed", "when timed faults strike and how long they last"),
    ("unique_ids", "each client's unique id"),
    ("ensemble_swarm", "the ensemble a seed picks (swarm mode)"),
    ("workload", "a client's durations and picks (workload_N)"),
];

/// Whether `name` is a stream a world draws from (`workload_N` for a
/// client below `clients`).
pub fn is_stream(name: &str, clients: usize) -> bool {
    match name.strip_prefix("workload_") {
        Some(index) => index.parse::<usize>().is_ok_and(|index| index < clients),
        None => name != "workload" && STREAMS.iter().any(|(known, _)| *known == name),
    }
}

/// One stream's generator: its seeded generator, behind the tape's words
/// for it when a tape is installed.
pub struct Stream {
    rng: SmallRng,
    taping: Option<Box<Taping>>,
}

struct Taping {
    script: Vec<u64>,
    next: usize,
    /// Words answered so far, from the tape or the generator.
    drawn: usize,
    /// The words this stream answered, when the run records.
    log: Option<StreamLog>,
}

/// One stream's recorded words (each stream its own, so a word drawn
/// costs a push, not a lookup by the stream's name).
type StreamLog = Arc<Mutex<Vec<u64>>>;

/// Every stream's log, by name, in the order the streams were made.
type Log = Arc<Mutex<Vec<(String, StreamLog)>>>;

impl Stream {
    /// A stream that only draws (no tape).
    pub fn seeded(rng: SmallRng) -> Stream {
        Stream { rng, taping: None }
    }

    /// How many words the stream has drawn, when it is taped (the index
    /// of its next word on the recorded tape); None for a plain stream.
    pub fn drawn(&self) -> Option<usize> {
        self.taping.as_ref().map(|taping| taping.drawn)
    }
}

impl RngCore for Stream {
    fn next_u64(&mut self) -> u64 {
        let Some(taping) = &mut self.taping else {
            return self.rng.next_u64();
        };
        let word = match taping.script.get(taping.next) {
            Some(&word) => {
                taping.next += 1;
                word
            }
            None => self.rng.next_u64(),
        };
        taping.drawn += 1;
        if let Some(log) = &taping.log {
            log.lock().expect("a draw log is never poisoned").push(word);
        }
        word
    }

    /// The upper half of a word, as `SmallRng` does on 64-bit targets (so
    /// a stream without a tape draws exactly what its generator would).
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Whole words, then the rest of one, as `SmallRng` fills bytes.
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        let mut left = dest;
        while left.len() >= 8 {
            let (word, rest) = left.split_at_mut(8);
            word.copy_from_slice(&self.next_u64().to_le_bytes());
            left = rest;
        }
        match left.len() {
            0 => {}
            1..=4 => left.copy_from_slice(&self.next_u32().to_le_bytes()[..left.len()]),
            n => left.copy_from_slice(&self.next_u64().to_le_bytes()[..n]),
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

/// What a run is asked to do with its draws (and whether it keeps its
/// coverage: [`super::coverage`]).
#[derive(Clone, Debug, Default)]
pub struct DrawRequest {
    /// Answer from these words first (None: draw from the seed only).
    pub script: Option<DrawTape>,
    /// Log every word and hand the tape back at the end.
    pub record: bool,
    /// Seed the streams' generators from this seed instead of the run's
    /// (None: the run's). A replayed tape that decides every draw runs the
    /// same whatever this is: the test that nothing draws elsewhere.
    pub stream_seed: Option<u64>,
    /// Keep the run's abstract states and steps (`RunReport::coverage`).
    pub coverage: bool,
}

/// The draws of one world: where its streams come from.
pub struct Draws {
    /// The run's seed (the tape's).
    seed: u64,
    /// What the streams' generators are seeded from.
    stream_seed: u64,
    script: BTreeMap<String, Vec<u64>>,
    log: Option<Log>,
    taped: bool,
    /// The run keeps its coverage.
    pub coverage: bool,
}

impl Draws {
    /// The draws of a run of `seed`, as the installed request says (none
    /// installed: plain seeded streams).
    pub fn for_run(seed: u64) -> Draws {
        let request = take().unwrap_or_default();
        Draws {
            seed,
            stream_seed: request.stream_seed.unwrap_or(seed),
            taped: request.script.is_some() || request.record,
            script: request.script.map(|tape| tape.streams).unwrap_or_default(),
            log: request.record.then(Log::default),
            coverage: request.coverage,
        }
    }

    /// The stream `name`, seeded as `stream(seed, purpose)` always was.
    pub fn stream(&mut self, name: &str, purpose: u64) -> Stream {
        self.stream_from(name, crate::faults::plan::stream(self.stream_seed, purpose))
    }

    /// Client `client`'s workload stream (`workload_N`), seeded as
    /// `stream(seed ^ client, purpose)` always was.
    pub fn workload(&mut self, client: usize, purpose: u64) -> Stream {
        let rng = crate::faults::plan::stream(self.stream_seed ^ client as u64, purpose);
        self.stream_from(&format!("workload_{client}"), rng)
    }

    fn stream_from(&mut self, name: &str, rng: SmallRng) -> Stream {
        if !self.taped {
            return Stream::seeded(rng);
        }
        Stream {
            rng,
            taping: Some(Box::new(Taping {
                script: self.script.remove(name).unwrap_or_default(),
                next: 0,
                drawn: 0,
                log: self.log.as_ref().map(|log| {
                    let words = StreamLog::default();
                    let mut streams = log.lock().expect("the draw log is never poisoned");
                    streams.push((name.to_string(), words.clone()));
                    words
                }),
            })),
        }
    }

    /// What the run drew (recording only); streams made before this call
    /// and drawing after it are not in it.
    pub fn recorded(&self) -> Option<DrawTape> {
        let log = self.log.as_ref()?;
        let mut streams: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (name, words) in log.lock().expect("the draw log is never poisoned").iter() {
            let words = std::mem::take(&mut *words.lock().expect("a draw log is never poisoned"));
            if !words.is_empty() {
                streams.entry(name.clone()).or_default().extend(words);
            }
        }
        Some(DrawTape {
            seed: self.seed,
            streams,
        })
    }
}

thread_local! {
    static INSTALLED: RefCell<Option<DrawRequest>> = const { RefCell::new(None) };
    static COLLECTED: RefCell<Option<DrawTape>> = const { RefCell::new(None) };
}

/// Hands `request` to the next run started on this thread.
pub fn install(request: DrawRequest) {
    INSTALLED.with(|slot| *slot.borrow_mut() = Some(request));
}

/// The request installed for the next run, if any (the world, when it is
/// built; the isolated runner, to move it to the run's thread).
pub fn take() -> Option<DrawRequest> {
    INSTALLED.with(|slot| slot.borrow_mut().take())
}

/// A finished run's recorded tape (the world, at its end).
pub fn give_back(tape: DrawTape) {
    COLLECTED.with(|slot| *slot.borrow_mut() = Some(tape));
}

/// The recorded tape of the run that just finished on this thread.
pub fn collect() -> Option<DrawTape> {
    COLLECTED.with(|slot| slot.borrow_mut().take())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn draws(request: DrawRequest) -> Draws {
        install(request);
        Draws::for_run(7)
    }

    fn recording() -> DrawRequest {
        DrawRequest {
            record: true,
            ..DrawRequest::default()
        }
    }

    #[test]
    fn without_a_tape_a_stream_draws_what_its_generator_draws() {
        let mut plain = draws(DrawRequest::default()).stream("net", 10);
        let mut recorded = draws(recording()).stream("net", 10);
        let mut generator = crate::faults::plan::stream(7, 10);
        for _ in 0..50 {
            let expected: u64 = generator.gen_range(0..1_000_000);
            assert_eq!(plain.gen_range(0..1_000_000u64), expected);
            assert_eq!(recorded.gen_range(0..1_000_000u64), expected);
        }
        assert_eq!(generator.gen::<u32>(), plain.gen::<u32>());
        assert_eq!(generator.gen::<f64>(), plain.gen::<f64>());
    }

    #[test]
    fn a_recorded_tape_replays_the_same_draws_and_then_falls_back() {
        let mut recording = draws(recording());
        let mut stream = recording.stream("lag", 17);
        let first: Vec<u64> = (0..20).map(|_| stream.gen_range(1..=500)).collect();
        let tape = recording.recorded().expect("recording");
        assert_eq!(tape.seed, 7);
        assert_eq!(tape.streams["lag"].len(), 20);
        let mut replaying = draws(DrawRequest {
            script: Some(tape),
            record: false,
            stream_seed: Some(8),
            coverage: false,
        });
        let mut replayed = replaying.stream("lag", 17);
        let again: Vec<u64> = (0..20).map(|_| replayed.gen_range(1..=500)).collect();
        assert_eq!(first, again);
        let past_the_tape = replayed.gen_range(1..=500);
        let from_seed_8 = crate::faults::plan::stream(8, 17).gen_range(1..=500);
        assert_eq!(past_the_tape, from_seed_8);
    }

    #[test]
    fn stream_names_are_checked() {
        assert!(is_stream("net", 2));
        assert!(is_stream("workload_1", 2));
        assert!(!is_stream("workload_2", 2));
        assert!(!is_stream("workload", 2));
        assert!(!is_stream("latency", 2));
    }
}
