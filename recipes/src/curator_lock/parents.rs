//! Curator's `creatingParentsIfNeeded` / `creatingParentContainersIfNeeded`
//! as data: the ancestors to create, top down, when a create fails with NoNode.

use crate::zk::Path;

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
}
