//! A writable system (`SandboxSpec::writable_system`): overlays of the
//! host's system directories whose changes stay in the environment's own
//! directory, across restarts, and never reach the host or another sandbox;
//! system packages installed through them with apt (one test needs
//! deb.debian.org).

use super::support::*;
use sandbox::{Error, NetworkPolicy, Packages, Sandbox, SandboxSpec, SetupSpec, apply_setup};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn writable(dir: &Path, prefix: &str, network: NetworkPolicy) -> SandboxSpec {
    let mut spec = SandboxSpec::new(unique_id(prefix), dir.join("workspace"));
    spec.writable_system = Some(dir.join("system"));
    spec.network = network;
    spec
}

async fn create(spec: SandboxSpec) -> Arc<sandbox::local::LocalSandbox> {
    backend().create_local(spec).await.unwrap()
}

/// A directory for a writable system, which needs the server to run as root;
/// elsewhere creating one must say so, and `None` ends the test there.
async fn writable_dir_if_root() -> Option<tempfile::TempDir> {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    if std::fs::metadata("/proc/self").unwrap().uid() == 0 {
        return Some(dir);
    }
    let spec = writable(dir.path(), "sys-not-root", NetworkPolicy::Disabled);
    let Err(e) = backend().create_local(spec).await else { panic!("a writable system without root") };
    assert!(e.to_string().contains("needs the server to run as root"), "{e}");
    None
}

async fn fails(sandbox: &dyn Sandbox, command: &str) -> bool {
    !run(sandbox, command).await.status.success()
}

#[tokio::test]
async fn a_writable_system_is_the_environments_own_and_survives_a_restart() {
    let Some(dir) = writable_dir_if_root().await else { return };
    let a = create(writable(dir.path(), "sys-a", NetworkPolicy::Disabled)).await;
    let marker = format!("rebyte-test-{}", std::process::id());
    sh(
        &*a,
        &format!("echo usr > /usr/local/{marker} && echo etc > /etc/{marker} && echo var > /var/lib/dpkg/{marker}"),
    )
    .await;
    sh(&*a, "echo tmp > /var/tmp/x && rm /etc/hostname && test ! -e /etc/hostname").await;
    assert_eq!(sh(&*a, "wc -c < /etc/shadow").await, "0", "masks stay on top of the overlay");
    for host in [format!("/usr/local/{marker}"), format!("/etc/{marker}"), format!("/var/lib/dpkg/{marker}")] {
        assert!(!Path::new(&host).exists(), "{host} reached the host");
    }
    assert!(dir.path().join("system/upper/usr/local").join(&marker).is_file());

    let other_dir = tempfile::tempdir().unwrap();
    let other = create(writable(other_dir.path(), "sys-b", NetworkPolicy::Disabled)).await;
    assert!(fails(&*other, &format!("test -e /usr/local/{marker}")).await, "another environment sees it");
    assert!(fails(&*other, "test ! -e /etc/hostname").await);
    let plain = start("sys-plain").await;
    assert!(fails(&*plain, "touch /usr/local/x").await, "the default system stays read-only");
    assert!(fails(&*plain, "test -e /var/lib/dpkg/status").await, "and has no /var");

    a.destroy().await.unwrap();
    let again = create(writable(dir.path(), "sys-a2", NetworkPolicy::Disabled)).await;
    assert_eq!(
        sh(&*again, &format!("cat /usr/local/{marker} /etc/{marker} /var/lib/dpkg/{marker}")).await,
        "usr\netc\nvar"
    );
    assert_eq!(sh(&*again, "cat /var/tmp/x; test ! -e /etc/hostname && echo gone").await, "tmp\ngone");
}

#[tokio::test]
async fn system_packages_without_network_fail_before_running_apt() {
    let Some(dir) = writable_dir_if_root().await else { return };
    let sb = create(writable(dir.path(), "sys-offline", NetworkPolicy::Disabled)).await;
    let spec = SetupSpec {
        packages: Packages { system: vec!["hello".into()], ..Default::default() },
        network: false,
        ..Default::default()
    };
    let Err(Error::Setup(f)) = apply_setup(&*sb, &spec).await else { panic!("setup succeeded") };
    assert_eq!(f.step, "packages.system");
    assert!(f.reason.contains("need network access"), "{}", f.reason);
    assert!(f.output.contains("network.access: enabled"), "{}", f.output);
}

/// GNU hello: 53 kB, depends on libc6 only, absent from the host (checked).
#[tokio::test]
async fn system_packages_install_with_apt_into_one_environment_only() {
    let on_host = |p: &str| PathBuf::from(p).exists();
    assert!(!on_host("/usr/bin/hello"), "this test needs a host without the `hello` package");
    let Some(dir) = writable_dir_if_root().await else { return };
    let sb = create(writable(dir.path(), "sys-apt", NetworkPolicy::Enabled)).await;
    let spec = SetupSpec {
        packages: Packages { system: vec!["hello".into()], ..Default::default() },
        setup_commands: vec!["hello".into()],
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let log = match apply_setup(&*sb, &spec).await {
        Ok(log) => log.log,
        Err(Error::Setup(f)) => panic!("{f}\n{}", f.log),
        Err(e) => panic!("{e}"),
    };
    eprintln!("apt setup took {:?}", started.elapsed());
    assert!(log.contains("Setting up hello") && log.contains("Hello, world!"), "{log}");
    assert_eq!(sh(&*sb, "hello").await, "Hello, world!");
    assert!(sh(&*sb, "dpkg -s hello").await.contains("Status: install ok installed"));

    assert!(!on_host("/usr/bin/hello"), "the package reached the host");
    let status = std::fs::read_to_string("/var/lib/dpkg/status").unwrap();
    assert!(!status.contains("\nPackage: hello\n"), "the host's dpkg database changed");
    let other_dir = tempfile::tempdir().unwrap();
    let other = create(writable(other_dir.path(), "sys-apt-other", NetworkPolicy::Enabled)).await;
    assert!(fails(&*other, "command -v hello").await, "another environment sees the package");
    assert!(fails(&*other, "dpkg -s hello").await);
}

/// apt speaks plain HTTP to the mirror, pipelining on kept-alive connections:
/// the restricted network's forwarding proxy must carry it.
#[tokio::test]
async fn system_packages_install_through_a_restricted_networks_proxy() {
    let Some(dir) = writable_dir_if_root().await else { return };
    let mut spec = writable(dir.path(), "sys-apt-proxy", NetworkPolicy::Restricted);
    spec.domains = sandbox::egress::DomainPolicy::new(&["deb.debian.org".into()], &[]).unwrap();
    let sb = create(spec).await;
    let setup = SetupSpec {
        packages: Packages { system: vec!["hello".into()], ..Default::default() },
        setup_commands: vec!["hello".into()],
        ..Default::default()
    };
    let log = match apply_setup(&*sb, &setup).await {
        Ok(log) => log.log,
        Err(Error::Setup(f)) => panic!("{f}\n{}", f.log),
        Err(e) => panic!("{e}"),
    };
    assert!(log.contains("Setting up hello") && log.contains("Hello, world!"), "{log}");
}
