//! Forks of a running sandbox's workspace (`sandbox::layers`): the fork sees
//! the files of the moment, writes on either side stay on that side, the
//! source's processes keep running, and a second fork stacks a layer.

use super::support::*;
use sandbox::layers::LayerStore;
use sandbox::{ExecRequest, Sandbox, SandboxSpec};
use std::path::Path;

async fn start_over(backend: &sandbox::LocalBackend, store: &LayerStore, dir: &Path) -> TestLike {
    let mut spec = SandboxSpec::new(unique_id("fork"), dir.join("workspace"));
    std::fs::create_dir_all(dir.join("home")).unwrap();
    spec.home = Some(dir.join("home"));
    store.prepare(dir, &mut spec).unwrap();
    TestLike(backend.create_local(spec).await.unwrap())
}

struct TestLike(std::sync::Arc<sandbox::local::LocalSandbox>);

impl Drop for TestLike {
    fn drop(&mut self) {
        let sb = self.0.clone();
        tokio::spawn(async move { sb.destroy().await });
    }
}

#[tokio::test]
async fn a_fork_sees_the_files_of_the_moment_and_each_side_keeps_its_own_writes() {
    let root = tempfile::tempdir().unwrap();
    let (src, dst) = (root.path().join("env_src"), root.path().join("env_dst"));
    let store = LayerStore::new(root.path());
    let backend = backend();
    let source = start_over(&backend, &store, &src).await;
    sh(&*source.0, "echo one > a.txt && mkdir -p d && echo two > d/b.txt && echo gone > c.txt").await;
    sh(&*source.0, "mkdir -p /root/.local && echo home > /root/.local/pkg").await;
    // A process with its working directory in /workspace keeps running.
    let ticker = source.0.exec(ExecRequest::new("while true; do sleep 0.05; done")).await.unwrap();

    let forked = store.fork(&src, &dst, &*source.0).await.unwrap();
    assert!(!forked.copied, "nothing was open for writing: the fork is layered");
    assert_eq!(std::fs::read_dir(root.path().join(".layers")).unwrap().count(), 1);
    // The source goes on, over its new upper.
    sh(&*source.0, "echo source > a.txt && rm c.txt && echo new > e.txt").await;
    assert_eq!(sh(&*source.0, "cat a.txt d/b.txt; ls").await, "source\ntwo\na.txt\nd\ne.txt");
    assert!(ticker.pid() > 0);
    assert_eq!(sh(&*source.0, &format!("kill -0 {} && echo alive", ticker.pid())).await, "alive");

    let fork = start_over(&backend, &store, &dst).await;
    assert_eq!(sh(&*fork.0, "cat a.txt d/b.txt c.txt; ls").await, "one\ntwo\ngone\na.txt\nc.txt\nd");
    assert_eq!(sh(&*fork.0, &format!("kill -0 {} 2>/dev/null && echo alive || echo none", ticker.pid())).await, "none");
    assert_eq!(sh(&*fork.0, "cat /root/.local/pkg").await, "home", "the home is forked too");
    sh(&*fork.0, "echo fork > d/b.txt; echo fork-home > /root/.local/pkg").await;
    assert_eq!(sh(&*source.0, "cat /root/.local/pkg").await, "home");
    assert_eq!(sh(&*source.0, "cat d/b.txt").await, "two", "the fork's write is not the source's");
    assert_eq!(sh(&*fork.0, "cat a.txt").await, "one", "the source's write is not the fork's");

    // A second fork of the fork stacks a layer; a restart keeps every view.
    let third = root.path().join("env_third");
    store.fork(&dst, &third, &*fork.0).await.unwrap();
    drop(fork);
    let fork = start_over(&backend, &store, &dst).await;
    assert_eq!(sh(&*fork.0, "cat d/b.txt").await, "fork");
    let third_sb = start_over(&backend, &store, &third).await;
    assert_eq!(sh(&*third_sb.0, "cat a.txt d/b.txt c.txt").await, "one\nfork\ngone");
    assert_eq!(store.manifest(&third).unwrap().workspace.len(), 2);

    // Layers go when no manifest names them.
    drop(third_sb);
    std::fs::remove_dir_all(&third).unwrap();
    assert_eq!(store.collect().await.unwrap(), 0, "the fork still uses both layers");
    drop(fork);
    std::fs::remove_dir_all(&dst).unwrap();
    assert_eq!(store.collect().await.unwrap(), 1, "the fork's own layer is unused now");
}

#[tokio::test]
async fn a_file_open_for_writing_makes_the_fork_a_copy() {
    let root = tempfile::tempdir().unwrap();
    let (src, dst) = (root.path().join("env_src"), root.path().join("env_dst"));
    let store = LayerStore::new(root.path());
    let backend = backend();
    let source = start_over(&backend, &store, &src).await;
    sh(&*source.0, "echo kept > a.txt").await;
    let _writer = source.0.exec(ExecRequest::new("exec 3>>log.txt; while true; do sleep 0.05; done")).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let forked = store.fork(&src, &dst, &*source.0).await.unwrap();
    assert!(forked.copied);
    sh(&*source.0, "echo after > a.txt").await;
    let fork = start_over(&backend, &store, &dst).await;
    assert_eq!(sh(&*fork.0, "cat a.txt").await, "kept");
}

#[tokio::test]
async fn forks_stack_more_layers_than_one_mount_option_string_holds() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("env_src");
    let store = LayerStore::new(root.path());
    let backend = backend();
    let source = start_over(&backend, &store, &src).await;
    for n in 0..8 {
        sh(&*source.0, &format!("echo {n} > n{n}.txt")).await;
        store.fork(&src, &root.path().join(format!("env_fork{n}")), &*source.0).await.unwrap();
    }
    assert_eq!(store.manifest(&src).unwrap().workspace.len(), 8);
    let fork = start_over(&backend, &store, &root.path().join("env_fork7")).await;
    assert_eq!(sh(&*fork.0, "cat n0.txt n7.txt").await, "0\n7");
}
