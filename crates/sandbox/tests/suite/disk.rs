//! Disk quotas (`sandbox::disk`): an environment's directory is a disk image
//! of its own, so a write past its size fails with ENOSPC inside its sandbox
//! while another sandbox still writes; an image keeps its files and its size
//! across a reopening (a restart), deleting it frees it, and a fork's layer
//! made inside a deleted source's image keeps that image until the fork goes;
//! closing the images while the pool refills leaves nothing mounted; new
//! images start with the skeleton's directories.

use super::support::*;
use sandbox::disk::Images;
use sandbox::layers::LayerStore;
use sandbox::{Sandbox, SandboxSpec};
use std::path::Path;
use std::sync::Arc;

const QUOTA: u64 = 64 << 20;

async fn over(backend: &sandbox::LocalBackend, layers: &LayerStore, dir: &Path) -> Arc<sandbox::local::LocalSandbox> {
    let mut spec = SandboxSpec::new(unique_id("disk"), dir.join("workspace"));
    for d in ["workspace", "home"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    spec.home = Some(dir.join("home"));
    layers.prepare(dir, &mut spec).unwrap();
    backend.create_local(spec).await.unwrap()
}

/// Writes 100 MiB: the output and status of `head`.
async fn write_past(sandbox: &dyn Sandbox) -> String {
    let out = run(sandbox, "head -c 100M /dev/zero > big; echo status=$?; rm -f big").await;
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn mounted(dir: &Path) -> bool {
    let Ok(dir) = std::fs::canonicalize(dir) else { return false };
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    table.lines().any(|l| l.split(' ').nth(4) == dir.to_str())
}

#[tokio::test]
async fn a_write_past_the_quota_fails_with_enospc_inside_and_another_sandbox_still_writes() {
    let root = tempfile::tempdir().unwrap();
    let images = Images::open(root.path(), QUOTA).expect("this host loop-mounts (root)");
    let layers = LayerStore::new(root.path());
    images.ensure("env_a", QUOTA).await.unwrap();
    images.ensure("env_b", QUOTA).await.unwrap();
    let backend = backend();
    let a = over(&backend, &layers, &root.path().join("env_a")).await;
    let b = over(&backend, &layers, &root.path().join("env_b")).await;
    sh(&*b, "head -c 40M /dev/zero > held").await;

    let out = write_past(&*a).await;
    assert!(out.contains("No space left on device"), "{out}");
    assert!(!out.contains("status=0"), "{out}");
    // The other sandbox, and this one once it freed the space, still write.
    assert_eq!(sh(&*b, "head -c 10M /dev/zero > more && echo ok").await, "ok");
    assert_eq!(sh(&*a, "echo small > s && cat s").await, "small");
    // The home is on the same image.
    let out = run(&*a, "head -c 100M /dev/zero > /root/big; echo status=$?").await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("No space left on device"), "{out:?}");
    a.destroy().await.unwrap();
    b.destroy().await.unwrap();
}

#[tokio::test]
async fn an_image_keeps_its_files_and_size_across_a_restart_and_deleting_it_frees_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("env_kept");
    let layers = LayerStore::new(root.path());
    let backend = backend();
    let images = Images::open(root.path(), QUOTA).unwrap();
    images.ensure("env_kept", QUOTA).await.unwrap();
    let sandbox = over(&backend, &layers, &dir).await;
    sh(&*sandbox, "echo kept > /workspace/kept.txt").await;
    sandbox.destroy().await.unwrap();
    drop(images);
    assert!(!mounted(&dir), "the last one closed unmounts");
    assert!(!dir.join("workspace/kept.txt").exists());

    // A restart: a new backend (its warm agents cloned after the opening).
    let images = Images::open(root.path(), QUOTA).unwrap();
    let backend = super::support::backend();
    assert!(mounted(&dir), "a restart mounts every image again");
    images.ensure("env_kept", QUOTA).await.unwrap();
    let sandbox = over(&backend, &layers, &dir).await;
    assert_eq!(sh(&*sandbox, "cat kept.txt").await, "kept");
    assert!(write_past(&*sandbox).await.contains("No space left on device"), "the quota is kept");
    sandbox.destroy().await.unwrap();

    let image = images.image("env_kept");
    assert!(image.exists());
    assert!(images.remove("env_kept").await.unwrap());
    assert!(!image.exists(), "deleting frees the image");
    assert!(!mounted(&dir) && !dir.exists());
}

#[tokio::test]
async fn a_forks_layer_keeps_a_deleted_sources_image_until_the_fork_goes() {
    let root = tempfile::tempdir().unwrap();
    let (src, dst) = (root.path().join("env_src"), root.path().join("env_dst"));
    let layers = LayerStore::new(root.path());
    let backend = backend();
    let images = Images::open(root.path(), QUOTA).unwrap();
    images.ensure("env_src", QUOTA).await.unwrap();
    images.ensure("env_dst", QUOTA).await.unwrap();
    let source = over(&backend, &layers, &src).await;
    sh(&*source, "echo one > a.txt").await;
    let forked = layers.fork(&src, &dst, &*source).await.unwrap();
    assert!(!forked.copied);
    let link = std::fs::read_dir(root.path().join(".layers")).unwrap().next().unwrap().unwrap().path();
    assert!(std::fs::read_link(&link).is_ok(), "the layer lives in the source's image");
    source.destroy().await.unwrap();

    assert!(images.remove("env_src").await.unwrap());
    layers.collect().await.unwrap();
    images.sweep().await;
    assert!(images.image("env_src").exists(), "the fork still uses a layer inside it");
    let fork = over(&backend, &layers, &dst).await;
    assert_eq!(sh(&*fork, "cat a.txt").await, "one");
    fork.destroy().await.unwrap();

    assert!(images.remove("env_dst").await.unwrap());
    assert_eq!(layers.collect().await.unwrap(), 1);
    images.sweep().await;
    assert!(!images.image("env_src").exists() && !images.image("env_dst").exists());
    assert!(!link.exists() && std::fs::symlink_metadata(&link).is_err());
}

/// A server killed before it could unmount (its `Images` never dropped), its
/// data directory deleted since: the next opening anywhere detaches those
/// mounts, and leaves a live root's images alone.
#[tokio::test]
async fn an_opening_detaches_the_images_of_a_killed_servers_deleted_data_directory() {
    let killed = tempfile::tempdir().unwrap();
    let images = Images::open(killed.path(), QUOTA).unwrap();
    images.ensure("env_k", QUOTA).await.unwrap();
    let mount = killed.path().join("env_k");
    assert!(mounted(&mount));
    let mount = std::fs::canonicalize(&mount).unwrap();
    let root = std::fs::canonicalize(killed.path()).unwrap();
    let pool = root.join(".images/pool");
    std::mem::forget(images);
    let live = tempfile::tempdir().unwrap();
    let kept = Images::open(live.path(), QUOTA).unwrap();
    kept.ensure("env_live", QUOTA).await.unwrap();
    let listed = |p: &Path| {
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        table.lines().any(|l| l.split(' ').nth(4) == p.to_str())
    };
    let below = |p: &Path| {
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        table.lines().filter_map(|l| l.split(' ').nth(4)).filter(|t| Path::new(t).starts_with(p)).count()
    };
    // The killed server's pool refilled (two images ready) before it "died".
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while below(&pool) < 3 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(below(&pool), 3, "the pool's bind and its two ready images");
    // The data directory deleted as far as it can be: its files go, the
    // mount points stay busy.
    let rm_rf = |p: &Path| {
        std::process::Command::new("rm")
            .arg("-rf")
            .arg(p)
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    assert!(!rm_rf(killed.path()), "busy mount points stay");
    assert!(listed(&mount), "the killed server's image is still mounted");
    assert!(listed(&pool) && listed(&root), "and the binds it was under");

    let again = tempfile::tempdir().unwrap();
    let _opened = Images::open(again.path(), QUOTA).unwrap();
    assert!(!listed(&mount), "detached by the next opening");
    assert_eq!(below(&root), 0, "nothing left mounted under the deleted root, itself included");
    assert!(mounted(&live.path().join("env_live")), "a live root's image is left alone");
    assert!(mounted(live.path()), "and so is its root's bind");
    assert!(rm_rf(killed.path()) && !killed.path().exists(), "the deleted data directory can go now");
    // In case the sweep missed something, the test leaves no mount behind.
    sandbox::disk::detach_root(&root);
}

/// Closing the images while the pool refills (a take just started one):
/// the image that refill finishes afterwards is discarded, so nothing is
/// left mounted under the root and no prepared image stays on disk.
#[tokio::test]
async fn closing_while_the_pool_refills_leaves_no_image_mounted_or_on_disk() {
    let root = tempfile::tempdir().unwrap();
    let resolved = std::fs::canonicalize(root.path()).unwrap();
    let images = Images::open(root.path(), QUOTA).unwrap();
    // Takes the ready image and starts a refill (a copy and a mount).
    images.ensure("env_c", QUOTA).await.unwrap();
    drop(images);
    // Longer than a refill's two images take.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let under: Vec<&str> =
        table.lines().filter_map(|l| l.split(' ').nth(4)).filter(|t| Path::new(t).starts_with(&resolved)).collect();
    assert!(under.is_empty(), "still mounted under the root: {under:?}");
    let pooled: Vec<String> = std::fs::read_dir(root.path().join(".images"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pool-"))
        .collect();
    assert!(pooled.is_empty(), "prepared images left: {pooled:?}");
}

/// Images opened with a skeleton start with its directories, empty, on the
/// pool's first image and on the copies a refill makes after it, and every
/// environment's image is its own (a file made in one is not in the next).
#[tokio::test]
async fn every_new_image_starts_with_the_skeletons_directories_and_nothing_else() {
    let root = tempfile::tempdir().unwrap();
    let images = Images::open_with(root.path(), QUOTA, &["workspace", "home"]).unwrap();
    for id in ["env_s1", "env_s2", "env_s3"] {
        assert!(images.ensure(id, QUOTA).await.unwrap(), "{id} has an image");
        let dir = root.path().join(id);
        let mut names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["home", "workspace"], "{id}");
        assert!(std::fs::read_dir(dir.join("workspace")).unwrap().next().is_none(), "{id}'s workspace is empty");
        std::fs::write(dir.join("workspace/mine"), id).unwrap();
        // Let the refill copy the next images (it waits 15 ms first).
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}
