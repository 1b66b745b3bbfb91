//! One page of an environment's files below a directory, in path order,
//! without walking more of the tree than the page needs: a depth-first walk
//! whose siblings are visited in the order of their paths (a directory sorts
//! as its name followed by `/`, so the walk meets files in exactly the order
//! their full paths sort), skipping whole subtrees that lie before the page
//! token, and stopping once the page is full (`has_more` is then true if
//! anything is left to look into, so a last page may be empty). Every walk is
//! bounded: past [`MAX_DIRS_VISITED`] directories it ends its page early, or
//! is the caller's error when it found nothing (narrow the path) — never a
//! walk of minutes.

use crate::{Error, Result};
use protocol::list::Order;
use std::future::Future;

/// Most directories one page may look into.
pub const MAX_DIRS_VISITED: usize = 10_000;

/// One entry of a directory, as the walk needs it.
pub struct Entry {
    pub name: String,
    pub is_dir: bool,
    pub size: u64,
}

/// A page of `(path, size)` and whether more follow.
pub struct Walked {
    pub files: Vec<(String, u64)>,
    pub has_more: bool,
}

/// Whether `path` comes after the page token in the listing's order.
fn after(order: Order, path: &str, token: Option<&str>) -> bool {
    match (order, token) {
        (_, None) => true,
        (Order::Asc, Some(t)) => path > t,
        (Order::Desc, Some(t)) => path < t,
    }
}

/// Whether every path below `prefix` (`…/dir/`) comes before the token.
fn subtree_passed(order: Order, prefix: &str, token: Option<&str>) -> bool {
    let Some(t) = token else { return false };
    if t.starts_with(prefix) {
        return false;
    }
    match order {
        Order::Asc => prefix < t,
        Order::Desc => prefix > t,
    }
}

/// What the walk has still to do, the next last.
enum Item {
    /// A directory, as its path followed by `/`.
    Dir(String),
    File(String, u64),
}

impl Item {
    fn key(&self) -> &str {
        match self {
            Item::Dir(prefix) => prefix,
            Item::File(path, _) => path,
        }
    }
}

/// Walks below `root` for `limit` files after `token`, listing directories with `list`.
pub async fn walk<F, Fut>(root: &str, order: Order, token: Option<&str>, limit: usize, list: F) -> Result<Walked>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Vec<Entry>>>,
{
    let mut files = Vec::new();
    let mut stack = vec![Item::Dir(format!("{}/", root.trim_end_matches('/')))];
    let mut visited = 0;
    while let Some(item) = stack.pop() {
        let prefix = match item {
            Item::File(path, size) => {
                if files.len() == limit {
                    return Ok(Walked { files, has_more: true });
                }
                files.push((path, size));
                continue;
            }
            // A full page stops here: whether this directory holds more is the next page's question.
            Item::Dir(_) if files.len() == limit => return Ok(Walked { files, has_more: true }),
            Item::Dir(prefix) => prefix,
        };
        visited += 1;
        if visited > MAX_DIRS_VISITED {
            if !files.is_empty() {
                // What was found is a page; the next one goes on after its last path.
                return Ok(Walked { files, has_more: true });
            }
            return Err(Error::invalid(
                "path",
                format!("more than {MAX_DIRS_VISITED} directories below this path before a page was full; narrow it"),
            ));
        }
        let mut items: Vec<Item> = list(prefix.trim_end_matches('/').to_string())
            .await?
            .into_iter()
            .filter_map(|e| {
                if e.is_dir {
                    let sub = format!("{prefix}{}/", e.name);
                    (!subtree_passed(order, &sub, token)).then_some(Item::Dir(sub))
                } else {
                    let path = format!("{prefix}{}", e.name);
                    after(order, &path, token).then_some(Item::File(path, e.size))
                }
            })
            .collect();
        // Popped from the end: the first in the listing's order goes on last.
        items.sort_by(|a, b| match order {
            Order::Asc => b.key().cmp(a.key()),
            Order::Desc => a.key().cmp(b.key()),
        });
        stack.extend(items);
    }
    Ok(Walked { files, has_more: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A tree of `(path, size)` files; directories are implied by the paths.
    fn tree(paths: &[&str]) -> BTreeMap<String, Vec<(String, bool)>> {
        let mut dirs: BTreeMap<String, Vec<(String, bool)>> = BTreeMap::new();
        for p in paths {
            let mut parent = String::from("/w");
            let rest = p.strip_prefix("/w/").unwrap();
            let parts: Vec<&str> = rest.split('/').collect();
            for (i, part) in parts.iter().enumerate() {
                let is_dir = i + 1 < parts.len();
                let entry = dirs.entry(parent.clone()).or_default();
                if !entry.iter().any(|(n, _)| n == part) {
                    entry.push((part.to_string(), is_dir));
                }
                parent = format!("{parent}/{part}");
            }
        }
        dirs
    }

    async fn page(
        t: &BTreeMap<String, Vec<(String, bool)>>,
        order: Order,
        token: Option<&str>,
        limit: usize,
    ) -> Walked {
        walk("/w", order, token, limit, |dir| {
            let entries = t.get(&dir).cloned().unwrap_or_default();
            async move { Ok(entries.into_iter().map(|(name, is_dir)| Entry { name, is_dir, size: 1 }).collect()) }
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn pages_meet_files_in_the_order_of_their_full_paths_in_both_orders() {
        let paths = ["/w/b.txt", "/w/a/1.txt", "/w/a/2.txt", "/w/a-c", "/w/c/d/e.txt", "/w/z", "/w/a/b/c"];
        let t = tree(&paths);
        for order in [Order::Asc, Order::Desc] {
            let mut expected: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
            expected.sort();
            if order == Order::Desc {
                expected.reverse();
            }
            assert_eq!(page(&t, order, None, 100).await.files.into_iter().map(|f| f.0).collect::<Vec<_>>(), expected);
            for limit in 1..=3 {
                let (mut got, mut token) = (Vec::new(), None::<String>);
                loop {
                    let p = page(&t, order, token.as_deref(), limit).await;
                    got.extend(p.files.iter().map(|f| f.0.clone()));
                    token = p.files.last().map(|f| f.0.clone()).or(token);
                    if !p.has_more {
                        break;
                    }
                }
                assert_eq!(got, expected, "{order:?} by {limit}");
            }
        }
    }

    #[tokio::test]
    async fn a_tree_of_empty_directories_is_a_bounded_walk() {
        let counter = std::sync::atomic::AtomicUsize::new(0);
        let err = walk("/w", Order::Asc, None, 20, |dir| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // Every directory holds two more: endless.
            let _ = dir;
            async {
                Ok(vec![
                    Entry { name: "x".into(), is_dir: true, size: 0 },
                    Entry { name: "y".into(), is_dir: true, size: 0 },
                ])
            }
        })
        .await
        .err()
        .unwrap();
        assert!(err.to_string().contains("narrow it"), "{err}");
        assert_eq!(counter.load(std::sync::atomic::Ordering::Relaxed), MAX_DIRS_VISITED);
    }
}
