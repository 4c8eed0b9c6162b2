//! Paths as the real crate takes them: its validation rules (absolute, no
//! empty or relative segment, no refused character, no trailing slash
//! except for a sequential create's prefix) and its chroot (requests go
//! under the root; paths handed back have it stripped).

use std::borrow::Cow;
use std::sync::Arc;
use upstream::Error;
use zk_recipes::zk::Path;

/// A client's root (`chroot`): none, or an absolute path other than `/`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Root {
    root: Option<Arc<str>>,
}

/// A validated client path, resolved under the root.
#[derive(Clone, Debug)]
pub(crate) struct ServerPath {
    /// The path on the server.
    pub path: Path,
    /// The client asked for its root (`/`).
    pub is_root: bool,
}

impl Root {
    /// The root the connect string names (the part from its first `/`).
    pub fn of_connect_string(cluster: &str) -> Result<Root, Error> {
        let last = cluster.rsplit(',').next().unwrap_or(cluster);
        let last = last
            .strip_prefix("tcp://")
            .or_else(|| last.strip_prefix("tcp+tls://"))
            .unwrap_or(last);
        if last.is_empty() {
            return Err(Error::BadArguments(&"empty connect string"));
        }
        let mut root = Root::default();
        if let Some(at) = last.find('/') {
            if !root.change(&last[at..]) {
                return Err(Error::BadArguments(&"invalid chroot path"));
            }
        }
        Ok(root)
    }

    /// The root's path (`/` without one).
    pub fn path(&self) -> &str {
        self.root.as_deref().unwrap_or("/")
    }

    /// What prefixes server paths (empty without a root).
    pub fn prefix(&self) -> &str {
        self.root.as_deref().unwrap_or("")
    }

    /// Moves the root to `path`; false (and unchanged) if it is invalid.
    pub fn change<'a>(&mut self, path: impl Into<Cow<'a, str>>) -> bool {
        let path = path.into();
        if validate(&path, false).is_err() {
            return false;
        }
        self.root = (path != "/").then(|| Arc::from(path.as_ref()));
        true
    }

    /// Validates a client path and resolves it under the root; a
    /// sequential create's prefix may end with `/`.
    pub fn resolve(&self, path: &str, sequential: bool) -> Result<ServerPath, Error> {
        validate(path, sequential)?;
        let is_root = path == "/";
        let full = match (self.root.as_deref(), is_root) {
            (Some(root), true) => root.to_string(),
            (Some(root), false) => format!("{root}{path}"),
            (None, _) => path.to_string(),
        };
        let path = if sequential {
            Path::sequential_prefix(full)
        } else {
            Path::new(full)
        };
        let path = path.map_err(|_| Error::BadArguments(&"invalid path"))?;
        Ok(ServerPath { path, is_root })
    }

    /// The client's view of a server path (the root stripped; the root
    /// itself is `/`).
    pub fn strip(&self, server_path: &str) -> Result<String, Error> {
        let prefix = self.prefix();
        match server_path.strip_prefix(prefix) {
            Some("") => Ok("/".to_string()),
            Some(client_path) => Ok(client_path.to_string()),
            None => Err(Error::UnexpectedError(format!(
                "server path {server_path} is not descendant of root {prefix}"
            ))),
        }
    }
}

/// The real crate's path rules (`util::validate_path`), in the same order
/// of checks where messages could differ.
pub(crate) fn validate(path: &str, allow_trailing_slash: bool) -> Result<(), Error> {
    if path.is_empty() {
        return Err(Error::BadArguments(&"path cannot be empty"));
    }
    if !path.starts_with('/') {
        return Err(Error::BadArguments(&"path must start with '/'"));
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.chars().any(is_refused_char) {
        return Err(Error::BadArguments(&"unsupported characters in path"));
    }
    let segments: Vec<&str> = path[1..].split('/').collect();
    let last = segments.len() - 1;
    for (index, segment) in segments.iter().enumerate() {
        if index == last {
            // The last segment is only checked for being empty (a trailing
            // slash), as the real crate does.
            if segment.is_empty() && !allow_trailing_slash {
                return Err(Error::BadArguments(&"path must not end with '/'"));
            }
        } else if segment.is_empty() {
            return Err(Error::BadArguments(&"empty node is not allowed in path"));
        } else if *segment == "." || *segment == ".." {
            return Err(Error::BadArguments(&"relative path is not allowed"));
        }
    }
    Ok(())
}

fn is_refused_char(c: char) -> bool {
    matches!(u32::from(c),
        0x0000..=0x001f | 0x007f..=0x009f | 0xd800..=0xf8ff | 0xfff0..=0xffff)
}

/// The real crate's `util::split_path`: parent, parent with its trailing
/// `/`, and the last segment (`path` has a `/`: it was validated).
pub(crate) fn split_path(path: &str) -> (&str, &str, &str) {
    match path.rfind('/') {
        Some(0) | None => ("/", "/", path.get(1..).unwrap_or("")),
        Some(at) => (&path[..at], &path[..=at], &path[at + 1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_as_the_real_crate_splits_them() {
        assert_eq!(split_path("/a"), ("/", "/", "a"));
        assert_eq!(split_path("/a/b/c-"), ("/a/b", "/a/b/", "c-"));
        assert_eq!(split_path("/a/"), ("/a", "/a/", ""));
    }

    #[test]
    fn rules_are_the_real_crates() {
        assert!(validate("/a/b", false).is_ok());
        assert!(validate("/abc/.a./efg", false).is_ok());
        assert!(validate("/", false).is_ok());
        assert_eq!(
            validate("", false),
            Err(Error::BadArguments(&"path cannot be empty"))
        );
        assert_eq!(
            validate("a", false),
            Err(Error::BadArguments(&"path must start with '/'"))
        );
        assert_eq!(
            validate("/a//b", false),
            Err(Error::BadArguments(&"empty node is not allowed in path"))
        );
        assert_eq!(
            validate("/a/../b", false),
            Err(Error::BadArguments(&"relative path is not allowed"))
        );
        assert_eq!(
            validate("/a/", false),
            Err(Error::BadArguments(&"path must not end with '/'"))
        );
        assert!(validate("/a/", true).is_ok());
        assert!(validate("/a\u{1}", false).is_err());
    }

    #[test]
    fn chroot_resolves_and_strips() {
        let mut root = Root::default();
        assert!(root.change("/app"));
        assert!(!root.change("app"));
        assert_eq!(root.path(), "/app");
        assert_eq!(root.resolve("/", false).unwrap().path.as_str(), "/app");
        assert!(root.resolve("/", false).unwrap().is_root);
        assert_eq!(root.resolve("/x", false).unwrap().path.as_str(), "/app/x");
        assert_eq!(root.strip("/app/x").unwrap(), "/x");
        assert_eq!(root.strip("/app").unwrap(), "/");
        assert!(root.strip("/other").is_err());
        assert_eq!(
            Root::of_connect_string("h:1,h:2/app").unwrap().path(),
            "/app"
        );
        assert_eq!(Root::of_connect_string("h:1").unwrap().path(), "/");
    }
}
