//! Access control as ZooKeeper 3.8's server does it: the identities a
//! session authenticates as (`addAuth`), an ACL made concrete before it is
//! stored (`PrepRequestProcessor.fixupACL`), the permission check
//! (`ZooKeeperServer.checkACL`), what `getACL` shows and `whoAmI` lists.
//!
//! Every simulated client is on the loopback, as the conformance suite's
//! real clients are: each session is `ip:127.0.0.1` besides what it adds.
//! Only the `digest` and `ip` schemes are known (the providers a 3.8 server
//! registers by default); `super` is not configured.

use zk_recipes::zk::{ipv4, Acl, Acls, AuthId, Perms, ZkError};

/// The address every simulated client connects from.
pub const CLIENT_ADDRESS: &str = "127.0.0.1";

/// Every identity of a session (its address and what it added) in the
/// order a 3.8 server keeps them: `ServerCnxn.authInfo` is a set over a
/// `ConcurrentHashMap`, which iterates by hash bucket (16 buckets while it
/// holds at most 12), then in insertion order within a bucket.
pub(crate) fn identities(added: &[AuthId]) -> Vec<AuthId> {
    let mut ids = vec![AuthId::new("ip", CLIENT_ADDRESS)];
    ids.extend(added.iter().cloned());
    let buckets: usize = if ids.len() <= 12 { 16 } else { 64 };
    ids.sort_by_key(|id| java_bucket(id, buckets));
    ids
}

/// The bucket of `id` in a `ConcurrentHashMap` of `buckets` buckets:
/// the jute `Id.hashCode` (17, then 37 × each of the scheme's and the id's
/// `String.hashCode`), spread as the map spreads it.
fn java_bucket(id: &AuthId, buckets: usize) -> usize {
    let string_hash = |text: &str| {
        text.encode_utf16().fold(0i32, |hash, unit| {
            hash.wrapping_mul(31).wrapping_add(i32::from(unit))
        })
    };
    let hash = [&id.scheme, &id.id].iter().fold(17i32, |hash, part| {
        hash.wrapping_mul(37).wrapping_add(string_hash(part))
    });
    let hash = hash as u32;
    let spread = (hash ^ (hash >> 16)) & 0x7fff_ffff;
    spread as usize & (buckets - 1)
}

/// checkACL: NoAuth unless `acl` grants one of `wanted`'s bits to the
/// session (`added` its own identities).
pub(crate) fn check(acl: &Acls, wanted: Perms, added: &[AuthId]) -> Result<(), ZkError> {
    if matches!(acl, Acls::Open) || acl.grants(wanted, &identities(added)) {
        Ok(())
    } else {
        Err(ZkError::NoAuth)
    }
}

/// fixupACL: duplicates removed, `auth` entries replaced by the session's
/// authenticated (digest) identities, every other id checked by its
/// scheme; InvalidACL for an empty list, an `auth` entry of a session that
/// authenticated as nobody, or an id no provider accepts.
pub(crate) fn fixup(acl: &Acls, added: &[AuthId]) -> Result<Acls, ZkError> {
    let Acls::List(entries) = acl else {
        return Ok(Acls::Open);
    };
    let mut unique: Vec<&Acl> = Vec::new();
    for entry in entries {
        if !unique.contains(&entry) {
            unique.push(entry);
        }
    }
    if unique.is_empty() {
        return Err(ZkError::InvalidAcl);
    }
    let mut fixed = Vec::new();
    for entry in unique {
        match entry.id.scheme.as_str() {
            "world" if entry.id.id == "anyone" => fixed.push(entry.clone()),
            "auth" => {
                let authenticated: Vec<AuthId> = identities(added)
                    .into_iter()
                    .filter(|id| id.scheme == "digest")
                    .collect();
                if authenticated.is_empty() {
                    return Err(ZkError::InvalidAcl);
                }
                fixed.extend(authenticated.into_iter().map(|id| Acl {
                    perms: entry.perms,
                    id,
                }));
            }
            "digest" if digest_id_is_valid(&entry.id.id) => fixed.push(entry.clone()),
            "ip" if ip_id_is_valid(&entry.id.id) => fixed.push(entry.clone()),
            _ => return Err(ZkError::InvalidAcl),
        }
    }
    Ok(Acls::of(fixed))
}

/// DigestAuthenticationProvider.isValid: `user:hash`, both parts there
/// (Java's `split(":")` drops trailing empty parts, so `user:` is not).
fn digest_id_is_valid(id: &str) -> bool {
    let parts: Vec<&str> = id.split(':').collect();
    let kept = parts.len() - parts.iter().rev().take_while(|p| p.is_empty()).count();
    kept == 2
}

/// IPAuthenticationProvider.isValid: an address, optionally `/bits`.
fn ip_id_is_valid(id: &str) -> bool {
    let (address, bits) = match id.split_once('/') {
        Some((address, bits)) => (address, Some(bits)),
        None => (id, None),
    };
    ipv4(address).is_some() && bits.is_none_or(|bits| bits.parse::<u8>().is_ok_and(|b| b <= 32))
}

/// What addAuth adds for `scheme` and `auth`: a digest identity, nothing
/// new for `ip` (the session has its address already); AuthFailed for a
/// scheme the server has no provider for.
pub(crate) fn authenticate(scheme: &str, auth: &[u8]) -> Result<Option<AuthId>, ZkError> {
    match scheme {
        "digest" => Ok(Some(AuthId::new("digest", &digest_of(auth)))),
        "ip" => Ok(None),
        _ => Err(ZkError::AuthFailed),
    }
}

/// DigestAuthenticationProvider.generateDigest: `user:` and the base64 of
/// the SHA-1 of the whole `user:password`.
pub fn digest_of(user_password: &[u8]) -> String {
    let text = String::from_utf8_lossy(user_password);
    let user = text.split(':').next().unwrap_or_default();
    format!("{user}:{}", base64(&sha1(user_password)))
}

/// getACL as a session without ADMIN on the node sees it: digest ids'
/// hashes shown as `x`.
pub(crate) fn redacted(acl: &Acls) -> Acls {
    let Acls::List(entries) = acl else {
        return Acls::Open;
    };
    let shown = entries.iter().map(|entry| {
        let mut entry = entry.clone();
        if entry.id.scheme == "digest" {
            let user = entry.id.id.split(':').next().unwrap_or_default();
            entry.id.id = format!("{user}:x");
        }
        entry
    });
    Acls::List(shown.collect())
}

/// whoAmI: each identity as its scheme and user (a digest's user name, an
/// address as itself).
pub(crate) fn who_am_i(added: &[AuthId]) -> Vec<AuthId> {
    identities(added)
        .into_iter()
        .map(|id| match id.scheme.as_str() {
            "digest" => {
                let user = id.id.split(':').next().unwrap_or_default().to_string();
                AuthId { id: user, ..id }
            }
            _ => id,
        })
        .collect()
}

/// SHA-1 (FIPS 180-4), for digest ids only.
fn sha1(message: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let mut padded = message.to_vec();
    padded.push(0x80);
    while padded.len() % 64 != 56 {
        padded.push(0);
    }
    padded.extend_from_slice(&((message.len() as u64) * 8).to_be_bytes());
    for block in padded.chunks(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, word) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let next = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*word);
            (e, d, c, b, a) = (d, c, b.rotate_left(30), a, next);
        }
        for (state, part) in h.iter_mut().zip([a, b, c, d, e]) {
            *state = state.wrapping_add(part);
        }
    }
    let mut out = [0u8; 20];
    for (chunk, word) in out.chunks_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let word = chunk.iter().enumerate().fold(0u32, |word, (i, byte)| {
            word | u32::from(*byte) << (16 - 8 * i)
        });
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(word >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_and_base64_match_their_standard_vectors() {
        let hex: String = sha1(b"abc").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fooba"), "Zm9vYmE=");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
    }

    #[test]
    fn a_digest_is_zookeepers() {
        // ZooKeeper's administrator guide: super:test's digest.
        assert_eq!(
            digest_of(b"super:test"),
            "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
        );
    }

    #[test]
    fn identities_come_in_a_3_8_server_s_order() {
        // Measured on 3.8.0 (client/tests/conformance.rs, acl): the digest first.
        let ids = identities(&[AuthId::new("digest", &digest_of(b"alice:secret"))]);
        assert_eq!(ids[0].scheme, "digest");
        assert_eq!(ids[1], AuthId::new("ip", CLIENT_ADDRESS));
    }

    #[test]
    fn fixup_expands_auth_and_refuses_what_no_provider_accepts() {
        let entry = |scheme: &str, id: &str| Acl {
            perms: Perms::ALL,
            id: AuthId::new(scheme, id),
        };
        let me = [AuthId::new("digest", "u:h")];
        let auth = Acls::List(vec![entry("auth", "")]);
        assert_eq!(
            fixup(&auth, &me),
            Ok(Acls::List(vec![entry("digest", "u:h")]))
        );
        assert_eq!(fixup(&auth, &[]), Err(ZkError::InvalidAcl));
        for bad in [
            ("world", "bob"),
            ("digest", "u:"),
            ("ip", "1.2.3"),
            ("sasl", "u"),
        ] {
            let acl = Acls::List(vec![entry(bad.0, bad.1)]);
            assert_eq!(fixup(&acl, &me), Err(ZkError::InvalidAcl), "{bad:?}");
        }
        assert_eq!(
            fixup(&Acls::List(Vec::new()), &me),
            Err(ZkError::InvalidAcl)
        );
        let twice = Acls::List(vec![entry("ip", "10.0.0.0/8"), entry("ip", "10.0.0.0/8")]);
        assert_eq!(
            fixup(&twice, &[]),
            Ok(Acls::List(vec![entry("ip", "10.0.0.0/8")]))
        );
    }
}
