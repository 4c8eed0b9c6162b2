//! Access control: a node's ACL (`List<ACL>` in ZooKeeper), its entries
//! (`ACL`: permissions for an `Id`, a scheme and an id in it) and the
//! identities a session has authenticated as (`authInfo`).
//!
//! Almost every node of a recipe is open to anyone, so the common list is
//! a constant ([`Acls::Open`], ZooKeeper's `OPEN_ACL_UNSAFE`) that costs
//! no allocation.

use serde::{Deserialize, Serialize};

/// Permissions (`ZooDefs.Perms`), as bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Perms(pub i32);

impl Perms {
    pub const READ: Perms = Perms(1);
    pub const WRITE: Perms = Perms(2);
    pub const CREATE: Perms = Perms(4);
    pub const DELETE: Perms = Perms(8);
    pub const ADMIN: Perms = Perms(16);
    pub const ALL: Perms = Perms(31);

    /// True if any of `wanted`'s bits is granted (ZooKeeper's `checkACL`
    /// tests `(perms & wanted) != 0`).
    pub fn grants_any(self, wanted: Perms) -> bool {
        self.0 & wanted.0 != 0
    }
}

/// An identity: a scheme (`world`, `auth`, `digest`, `ip`) and an id in it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AuthId {
    pub scheme: String,
    pub id: String,
}

impl AuthId {
    pub fn new(scheme: &str, id: &str) -> AuthId {
        AuthId {
            scheme: scheme.to_string(),
            id: id.to_string(),
        }
    }

    /// `world:anyone`.
    pub fn anyone() -> AuthId {
        AuthId::new("world", "anyone")
    }
}

/// One entry of an ACL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Acl {
    pub perms: Perms,
    pub id: AuthId,
}

/// A node's ACL, as a create or a setACL gives it and getACL reads it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Acls {
    /// `world:anyone` with every permission (`OPEN_ACL_UNSAFE`).
    Open,
    /// Any other list, in the order given (it may be empty: the server
    /// refuses that with InvalidACL).
    List(Vec<Acl>),
}

impl Acls {
    /// The list for `entries`: [`Acls::Open`] when it is exactly that.
    pub fn of(entries: Vec<Acl>) -> Acls {
        let open = Acl {
            perms: Perms::ALL,
            id: AuthId::anyone(),
        };
        if entries.len() == 1 && entries[0] == open {
            Acls::Open
        } else {
            Acls::List(entries)
        }
    }

    /// The entries, in order.
    pub fn entries(&self) -> Vec<Acl> {
        match self {
            Acls::Open => vec![Acl {
                perms: Perms::ALL,
                id: AuthId::anyone(),
            }],
            Acls::List(entries) => entries.clone(),
        }
    }

    /// True if any entry grants one of `wanted`'s bits to one of `ids`,
    /// or to anyone (ZooKeeper's `checkACL`, the `super` id aside; digest
    /// ids match exactly, ip ids by address and prefix). An empty list
    /// grants everything, as ZooKeeper's does.
    pub fn grants(&self, wanted: Perms, ids: &[AuthId]) -> bool {
        let entries = match self {
            Acls::Open => return true,
            Acls::List(entries) => entries,
        };
        entries.is_empty()
            || entries.iter().any(|entry| {
                entry.perms.grants_any(wanted)
                    && (entry.id == AuthId::anyone()
                        || ids.iter().any(|id| id_matches(id, &entry.id)))
            })
    }
}

/// True if the authenticated `id` is the one an ACL entry names.
fn id_matches(id: &AuthId, named: &AuthId) -> bool {
    if id.scheme != named.scheme {
        return false;
    }
    match id.scheme.as_str() {
        "ip" => ip_matches(&id.id, &named.id),
        _ => id.id == named.id,
    }
}

/// `IPAuthenticationProvider.matches`: the address inside the ACL's
/// address and prefix length (IPv4 only here).
fn ip_matches(address: &str, named: &str) -> bool {
    let (network, bits) = match named.split_once('/') {
        Some((network, bits)) => match bits.parse::<u32>() {
            Ok(bits) if bits <= 32 => (network, bits),
            _ => return false,
        },
        None => (named, 32),
    };
    let (Some(address), Some(network)) = (ipv4(address), ipv4(network)) else {
        return false;
    };
    let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
    address & mask == network & mask
}

/// A dotted-quad IPv4 address as a number.
pub fn ipv4(text: &str) -> Option<u32> {
    let octets: Vec<u8> = text
        .split('.')
        .map(|octet| octet.parse::<u8>().ok())
        .collect::<Option<_>>()?;
    let [a, b, c, d] = octets[..] else {
        return None;
    };
    Some(u32::from_be_bytes([a, b, c, d]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(perms: Perms, scheme: &str, id: &str) -> Acl {
        Acl {
            perms,
            id: AuthId::new(scheme, id),
        }
    }

    #[test]
    fn open_is_one_constant_and_grants_everyone() {
        let open = Acls::of(vec![entry(Perms::ALL, "world", "anyone")]);
        assert_eq!(open, Acls::Open);
        assert!(open.grants(Perms::ADMIN, &[]));
        assert_eq!(open.entries(), vec![entry(Perms::ALL, "world", "anyone")]);
    }

    #[test]
    fn a_digest_entry_grants_its_own_id_and_permissions_only() {
        let acl = Acls::of(vec![entry(Perms::READ, "digest", "u:h")]);
        let me = [AuthId::new("digest", "u:h")];
        assert!(acl.grants(Perms::READ, &me));
        assert!(acl.grants(Perms(Perms::READ.0 | Perms::ADMIN.0), &me));
        assert!(!acl.grants(Perms::WRITE, &me));
        assert!(!acl.grants(Perms::READ, &[AuthId::new("digest", "v:h")]));
    }

    #[test]
    fn an_ip_entry_matches_by_prefix() {
        let acl = Acls::of(vec![entry(Perms::ALL, "ip", "127.0.0.0/8")]);
        assert!(acl.grants(Perms::READ, &[AuthId::new("ip", "127.0.0.1")]));
        assert!(!acl.grants(Perms::READ, &[AuthId::new("ip", "10.0.0.1")]));
        let exact = Acls::of(vec![entry(Perms::ALL, "ip", "127.0.0.1")]);
        assert!(exact.grants(Perms::READ, &[AuthId::new("ip", "127.0.0.1")]));
        assert_eq!(ipv4("1.2.3"), None);
    }
}
