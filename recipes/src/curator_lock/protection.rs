//! Curator 2.5.0's protected creates (`create().withProtection()`), which
//! seed 002's mutex and its semaphore both go through: each create builder
//! draws a fresh UUID and names the node `_c_<uuid>-<name>`; when a create
//! is retried after a connection loss, `findProtectedNodeInForeground`
//! looks for a child with that prefix before creating again.

use crate::rename::{push_decimal, Rename, Renaming};

/// One client's protection ids. Curator's random UUIDs are stood in for by
/// the client's unique id and the number of create builders so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Protection {
    unique_id: u64,
    creates: u32,
}

impl Protection {
    pub(crate) fn new(unique_id: u64) -> Protection {
        Protection {
            unique_id,
            creates: 0,
        }
    }

    /// A new create builder: a fresh UUID.
    pub(crate) fn next_create(&mut self) {
        self.creates = self.creates.wrapping_add(1);
    }

    /// The current builder's name prefix: `_c_<unique id>_<creates>-`.
    pub(crate) fn prefix(&self) -> String {
        format!("_c_{}_{}-", self.unique_id, self.creates)
    }

    /// `findNode`: the first child (in the server's order) carrying the
    /// current prefix.
    pub(crate) fn find(&self, children: Vec<String>) -> Option<String> {
        let prefix = self.prefix();
        children
            .into_iter()
            .find(|child| child.starts_with(&prefix))
    }
}

/// A protected node name `_c_<unique id><rest>` (this module's
/// `_c_<id>_<creates>-...` and the ticket's `_c_<id>-<label>`) under
/// `parent`, renamed: the unique id follows its client and a trailing
/// sequence suffix (after the label's `-`) is ranked. Other names, and a
/// create's prefix without a sequence, keep what they have.
pub(crate) fn rename_protected_node(r: &mut Renaming, parent: &str, name: &str) -> String {
    let Some(rest) = name.strip_prefix("_c_") else {
        return name.to_owned();
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (id, tail) = rest.split_at(digits);
    let Some(id) = id.parse::<u64>().ok() else {
        return name.to_owned();
    };
    if !tail.starts_with(['-', '_']) {
        return name.to_owned();
    }
    let mut renamed = String::with_capacity(name.len() + 2);
    renamed.push_str("_c_");
    push_decimal(&mut renamed, r.unique_id(id));
    let id_end = renamed.len();
    renamed.push_str(tail);
    // `%010d` after the label's `-`; `--2147483648` once wrapped.
    let Some(mut at) = renamed.len().checked_sub(10) else {
        return renamed;
    };
    if at <= id_end || !renamed[at..].bytes().all(|b| b.is_ascii_digit()) {
        return renamed;
    }
    if renamed[..at].ends_with("--") {
        at -= 1;
    }
    r.sequence_suffix(parent, &renamed, at)
}

impl Rename for Protection {
    fn rename(&mut self, r: &mut Renaming) {
        self.unique_id = r.unique_id(self.unique_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_builder_gets_its_own_prefix() {
        let mut protection = Protection::new(7);
        protection.next_create();
        assert_eq!(protection.prefix(), "_c_7_1-");
        let children = vec![
            "_c_7_2-lock-0000000003".to_string(),
            "_c_7_1-lock-0000000001".to_string(),
        ];
        assert_eq!(
            protection.find(children.clone()).as_deref(),
            Some("_c_7_1-lock-0000000001")
        );
        protection.next_create();
        assert_eq!(
            protection.find(children).as_deref(),
            Some("_c_7_2-lock-0000000003")
        );
        assert_eq!(protection.find(vec!["_c_8_2-lock-0000000004".into()]), None);
    }
}
