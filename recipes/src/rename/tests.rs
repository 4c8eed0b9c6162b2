//! Unit tests of renaming: sessions and unique ids follow their client,
//! numbers are written as `format!` writes them, and zxids and sequence
//! numbers become ranks (dense numbers being their own).

use super::numbers::DENSE_BITS;
use super::*;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Plain;
impl Recipe for Plain {
    type Call = ();
    type Outcome = ();
    fn handle(&mut self, _: crate::Input<()>, _: &mut crate::Outbox<()>) {}
}
impl Rename for Plain {
    fn rename(&mut self, _: &mut Renaming) {}
}
impl RenameRecipe for Plain {}

fn path(p: &str) -> Path {
    Path::new(p).unwrap()
}

#[test]
fn sessions_and_unique_ids_follow_their_client() {
    let r = Renaming::new::<Plain>(vec![2, 0, 1], SessionId(257), false, true);
    assert_eq!(r.session(SessionId(257)), SessionId(259));
    assert_eq!(r.session(SessionId(257 + 256 + 1)), SessionId(257 + 256));
    assert_eq!(r.session(SessionId(1)), SessionId(1));
    assert_eq!(r.session(SessionId(260)), SessionId(260));
    assert_eq!(r.unique_id(1), 3);
    assert_eq!(r.unique_id(3), 2);
    assert_eq!(r.unique_id(0), 0);
}

#[test]
fn numbers_are_written_as_format_writes_them() {
    for value in [0u64, 7, 10, 257, u64::MAX] {
        let mut out = String::from("x");
        push_decimal(&mut out, value);
        assert_eq!(out, format!("x{value}"));
    }
    for sequence in [0, 3, 1234567890, i32::MAX, -1, i32::MIN] {
        let mut out = String::new();
        push_sequence(&mut out, sequence);
        assert_eq!(out, format!("{sequence:010}"));
    }
}

#[test]
fn zxids_and_sequences_become_ranks() {
    let mut r = Renaming::new::<Plain>(vec![0], SessionId(257), true, true);
    let dir = path("/locks");
    for z in [9, 4, 12] {
        r.zxid(z);
    }
    assert_eq!(
        r.path(&path("/locks/x-0000000007")),
        path("/locks/x-0000000007")
    );
    r.sequence(&dir, 3);
    r.rank();
    assert_eq!((r.zxid(0), r.zxid(4), r.zxid(9), r.zxid(12)), (0, 1, 2, 3));
    // Each parent's ranks count from 0, which stays 0.
    assert_eq!(
        r.path(&path("/locks/x-0000000007")),
        path("/locks/x-0000000002")
    );
    assert_eq!(r.sequence(&dir, 3), 1);
    assert_eq!(r.path(&path("/locks")), path("/locks"));
}

fn numbers(zxids: &[Zxid], sequences: &[(&str, &[i32])]) -> Numbers {
    Numbers::new(
        zxids.to_vec(),
        sequences
            .iter()
            .map(|(parent, values)| (parent.to_string(), values.to_vec()))
            .collect(),
    )
}

/// Whether `parts` are dense, checked against collecting and ranking
/// them: dense exactly when every number is its own rank.
fn dense_as_ranked(parts: &[&Numbers]) -> bool {
    let dense = Numbers::are_dense(parts);
    let mut r = Renaming::new::<Plain>(vec![0], SessionId(257), true, true);
    for part in parts {
        r.collect(part);
    }
    r.rank();
    let in_range = parts.iter().all(|part| {
        part.zxids.iter().all(|z| *z < DENSE_BITS as i64)
            && part
                .sequences
                .iter()
                .flat_map(|(_, v)| v)
                .all(|v| *v < DENSE_BITS as i32)
    });
    if in_range {
        assert_eq!(dense, r.ranks_are_identity(), "{parts:?}");
    }
    dense
}

#[test]
fn dense_numbers_are_their_own_ranks() {
    let a = numbers(&[1, 3], &[("/q", &[0, 2])]);
    let b = numbers(&[2], &[("/l", &[1]), ("/q", &[1])]);
    assert!(dense_as_ranked(&[&a, &b]));
    assert!(dense_as_ranked(&[]));
    // A gap: 3 would rank 2.
    assert!(!dense_as_ranked(&[&a]));
    // Each parent counts on its own.
    let c = numbers(&[1, 2], &[("/l", &[3])]);
    assert!(!dense_as_ranked(&[&a, &b, &c]));
    // Below 0 (0 ranks above it) and past what the bits hold.
    assert!(!dense_as_ranked(&[&numbers(&[-1], &[])]));
    let far: Vec<Zxid> = (1..=DENSE_BITS as i64).collect();
    assert!(!dense_as_ranked(&[&numbers(&far, &[])]));
    let within: Vec<Zxid> = (1..DENSE_BITS as i64).collect();
    assert!(dense_as_ranked(&[&numbers(&within, &[])]));
}

#[test]
fn a_dense_renaming_keeps_every_number() {
    let mut r = Renaming::new::<Plain>(vec![0], SessionId(257), true, true);
    r.rank_dense();
    assert!(r.ranks_are_identity());
    assert_eq!((r.zxid(0), r.zxid(5)), (0, 5));
    assert_eq!(
        r.path(&path("/locks/x-0000000007")),
        path("/locks/x-0000000007")
    );
    let mut digested = std::collections::hash_map::DefaultHasher::new();
    assert!(r.digest(&numbers(&[5], &[("/locks", &[7])]), &mut digested));
}
