//! Znode paths, validated the way ZooKeeper's `PathUtils.validatePath` does.

use super::path_text::PathText;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// Why a string is not a valid znode path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error, Serialize, Deserialize)]
pub enum PathError {
    #[error("path must not be empty")]
    Empty,
    #[error("path must start with '/': {0:?}")]
    NotAbsolute(String),
    #[error("path must not end with '/' (only a sequential create may): {0:?}")]
    TrailingSlash(String),
    #[error("path has an empty segment ('//'): {0:?}")]
    EmptySegment(String),
    #[error("path has a relative segment ('.' or '..'): {0:?}")]
    RelativeSegment(String),
    #[error("path has an invalid character at byte {1}: {0:?}")]
    InvalidCharacter(String, usize),
}

/// An absolute znode path such as `/locks/lock-0000000004`.
///
/// A path is valid when it starts with `/`, has no empty, `.` or `..`
/// segment, no NUL or control character, and does not end with `/` — except
/// the *prefix* of a sequential create, which may (`/queue/` creates
/// `/queue/0000000000`); build that one with [`Path::sequential_prefix`].
///
/// A path is cloned into every request, event, watch and tree index that
/// names it, and the model checker clones those for every state: a short
/// path's text is kept in place, a long one shared (`PathText`), so a
/// clone never allocates. Equality, order and hash are those of the text.
#[derive(Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Path(PathText);

impl AsRef<str> for Path {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Path {
    /// The root znode `/`.
    pub fn root() -> Path {
        Path(PathText::new("/"))
    }

    /// A node path; a trailing slash is rejected.
    pub fn new(path: impl Into<String>) -> Result<Path, PathError> {
        let path = path.into();
        validate(&path, false)?;
        Ok(Path(PathText::new(&path)))
    }

    /// A path built from the components of a valid one (renaming keeps
    /// every component valid).
    pub(crate) fn new_unchecked(path: String) -> Path {
        Path(PathText::new(&path))
    }

    /// The path given to a sequential create, which may end with `/`.
    pub fn sequential_prefix(path: impl Into<String>) -> Result<Path, PathError> {
        let path = path.into();
        validate(&path, true)?;
        Ok(Path(PathText::new(&path)))
    }

    /// `self` + `/` + `name`; `name` must be one valid segment.
    pub fn child(&self, name: &str) -> Result<Path, PathError> {
        if self.is_root() {
            Path::new(format!("/{name}"))
        } else {
            Path::new(format!("{}/{name}", self.as_str()))
        }
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn is_root(&self) -> bool {
        self.as_str() == "/"
    }

    /// Whether `other` is this path or a descendant of it (what a
    /// recursive watch on this path covers).
    pub fn covers(&self, other: &Path) -> bool {
        match other.as_str().strip_prefix(self.as_str()) {
            Some(rest) => rest.is_empty() || self.is_root() || rest.starts_with('/'),
            None => false,
        }
    }

    /// True when the path ends with `/` (only a sequential prefix can).
    pub fn ends_with_slash(&self) -> bool {
        let path = self.as_str();
        path.len() > 1 && path.ends_with('/')
    }

    /// The parent path; `None` for the root. The parent of `/queue/` is `/queue`.
    pub fn parent(&self) -> Option<Path> {
        if self.is_root() {
            return None;
        }
        let path = self.as_str();
        let cut = path.rfind('/').expect("valid paths contain '/'");
        Some(if cut == 0 {
            Path::root()
        } else {
            Path(PathText::new(&path[..cut]))
        })
    }

    /// The last segment (`lock-0000000004` of `/locks/lock-0000000004`); empty for the root.
    pub fn name(&self) -> &str {
        let path = self.as_str();
        let cut = path.rfind('/').expect("valid paths contain '/'");
        &path[cut + 1..]
    }
}

fn validate(path: &str, sequential: bool) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathError::NotAbsolute(path.to_string()));
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') && !sequential {
        return Err(PathError::TrailingSlash(path.to_string()));
    }
    if let Some((at, _)) = path.char_indices().find(|(_, c)| is_invalid_char(*c)) {
        return Err(PathError::InvalidCharacter(path.to_string(), at));
    }
    let body = path.strip_suffix('/').unwrap_or(path);
    for segment in body[1..].split('/') {
        match segment {
            "" => return Err(PathError::EmptySegment(path.to_string())),
            "." | ".." => return Err(PathError::RelativeSegment(path.to_string())),
            _ => {}
        }
    }
    Ok(())
}

/// Characters ZooKeeper refuses in paths (PathUtils.validatePath).
fn is_invalid_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl PartialEq for Path {
    fn eq(&self, other: &Path) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Path {}

impl PartialOrd for Path {
    fn partial_cmp(&self, other: &Path) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Path {
    fn cmp(&self, other: &Path) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Path {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl TryFrom<String> for Path {
    type Error = PathError;
    /// Accepts node paths and sequential prefixes alike (used by serde).
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Path::sequential_prefix(value)
    }
}

impl From<Path> for String {
    fn from(path: Path) -> String {
        path.as_str().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_paths() {
        for p in ["/", "/a", "/a/b", "/locks/lock-", "/a.b/..c"] {
            assert!(Path::new(p).is_ok(), "{p}");
        }
    }

    #[test]
    fn rejects_invalid_paths() {
        assert_eq!(Path::new(""), Err(PathError::Empty));
        assert!(matches!(Path::new("a"), Err(PathError::NotAbsolute(_))));
        assert!(matches!(Path::new("/a/"), Err(PathError::TrailingSlash(_))));
        assert!(matches!(
            Path::new("/a//b"),
            Err(PathError::EmptySegment(_))
        ));
        assert!(matches!(
            Path::new("/a/./b"),
            Err(PathError::RelativeSegment(_))
        ));
        assert!(matches!(
            Path::new("/a/.."),
            Err(PathError::RelativeSegment(_))
        ));
        assert!(matches!(
            Path::new("/a\u{0}"),
            Err(PathError::InvalidCharacter(_, 2))
        ));
    }

    #[test]
    fn sequential_prefix_may_end_with_slash() {
        let p = Path::sequential_prefix("/queue/").unwrap();
        assert_eq!(p.parent(), Some(Path::new("/queue").unwrap()));
        assert_eq!(p.name(), "");
        assert!(Path::sequential_prefix("/q//").is_err());
    }

    #[test]
    fn parent_and_name() {
        let p = Path::new("/a/b").unwrap();
        assert_eq!(p.parent().unwrap().as_str(), "/a");
        assert_eq!(p.name(), "b");
        assert_eq!(Path::new("/a").unwrap().parent(), Some(Path::root()));
        assert_eq!(Path::root().parent(), None);
        assert_eq!(Path::root().child("x").unwrap().as_str(), "/x");
    }
}
