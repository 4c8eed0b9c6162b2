//! Curator's `creatingParentsIfNeeded` / `creatingParentContainersIfNeeded`
//! as data: the ancestors to create, top down, when a create fails with
//! NoNode; and `ZKPaths.mkdirs` one create at a time, as Curator 2.5.0 (seed
//! 002) does it, with persistent parents.

use crate::zk::Acls;
use crate::zk::{CreateMode, Path, Request};

/// Every path from the top segment down to `path` itself: `/a/b` gives
/// `[/a, /a/b]`. The root is never included.
pub fn ancestors_and_self(path: &Path) -> Vec<Path> {
    let mut chain = Vec::new();
    let mut current = Some(path.clone());
    while let Some(node) = current {
        if node.is_root() {
            break;
        }
        current = node.parent();
        chain.push(node);
    }
    chain.reverse();
    chain
}

/// `ZKPaths.mkdirs(path)`, step `level`: create ancestor number `level` of
/// `path` (top down, `path` itself last) as a persistent node. `None` past
/// the last step.
pub fn mkdirs_step(path: &Path, level: usize) -> Option<Request> {
    let ancestor = ancestors_and_self(path).into_iter().nth(level)?;
    Some(Request::Create {
        path: ancestor,
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    })
}

/// True when `level` is the last step of `mkdirs(path)`.
pub fn is_last_mkdirs_step(path: &Path, level: usize) -> bool {
    level + 1 >= ancestors_and_self(path).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_chain_top_down() {
        let chain = ancestors_and_self(&Path::new("/locks/order-17").unwrap());
        let names: Vec<&str> = chain.iter().map(Path::as_str).collect();
        assert_eq!(names, ["/locks", "/locks/order-17"]);
        assert!(ancestors_and_self(&Path::root()).is_empty());
    }

    #[test]
    fn mkdirs_creates_persistent_parents_top_down() {
        let path = Path::new("/locks/order-17").unwrap();
        let created: Vec<Request> = (0..).map_while(|level| mkdirs_step(&path, level)).collect();
        let expected = ["/locks", "/locks/order-17"].map(|p| Request::Create {
            path: Path::new(p).unwrap(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        });
        assert_eq!(created, expected);
        assert!(!is_last_mkdirs_step(&path, 0));
        assert!(is_last_mkdirs_step(&path, 1));
    }
}
