//! `apply_setup`: inline files, env and setup commands are applied in order;
//! a failing or hanging command stops setup with its own output.

use super::support::*;
use base64::Engine;
use sandbox::{Error, SetupEvent, SetupFile, SetupSpec, apply_setup, apply_setup_observed};
use std::time::Duration;

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[tokio::test]
async fn setup_writes_inline_files_sets_env_and_runs_commands_in_order() {
    let sb = start("setup-ok").await;
    let spec = SetupSpec {
        files: vec![SetupFile { path: "/workspace/input.txt".into(), data: b64("Shared input") }],
        env: [("GREETING".to_string(), "hello".to_string())].into(),
        setup_commands: vec!["echo step-one".into(), "cat input.txt > copy.txt; echo $GREETING".into()],
        ..Default::default()
    };
    let log = apply_setup(&*sb.sandbox, &spec).await.unwrap();
    assert!(log.log.contains("$ echo step-one\nstep-one\n"), "{}", log.log);
    assert!(log.log.contains("hello\n"));
    assert_eq!(std::fs::read_to_string(sb.host_path("copy.txt")).unwrap(), "Shared input");
    // The env stays for every later command.
    assert_eq!(sh(&*sb.sandbox, "echo $GREETING").await, "hello");
}

#[tokio::test]
async fn a_watcher_is_told_each_step_and_every_piece_of_the_log() {
    let sb = start("setup-observed").await;
    let spec = SetupSpec {
        files: vec![SetupFile { path: "/workspace/in.txt".into(), data: b64("x") }],
        setup_commands: vec!["echo one; sleep 0.2; echo two".into(), "echo three >&2".into()],
        ..Default::default()
    };
    let (mut steps, mut logged) = (Vec::new(), String::new());
    let mut observe = |e: SetupEvent<'_>| match e {
        SetupEvent::Step { name, command, index, total } => {
            steps.push((name.to_string(), command.to_string(), index, total))
        }
        SetupEvent::Log(text) => logged.push_str(text),
    };
    let log = apply_setup_observed(&*sb.sandbox, &spec, &mut observe).await.unwrap();
    assert_eq!(
        steps,
        [
            ("files[0]".to_string(), "write /workspace/in.txt".to_string(), 0, 3),
            ("setup_commands[0]".to_string(), "echo one; sleep 0.2; echo two".to_string(), 1, 3),
            ("setup_commands[1]".to_string(), "echo three >&2".to_string(), 2, 3),
        ]
    );
    assert_eq!(logged, log.log, "the pieces make the whole log");
    assert!(log.log.contains("$ echo one; sleep 0.2; echo two\none\ntwo\n$ echo three >&2\nthree\n"), "{}", log.log);
    assert_eq!(spec.step_count(), 3);
}

#[tokio::test]
async fn a_failing_setup_command_reports_its_output_and_stops_setup() {
    let sb = start("setup-fail").await;
    let spec = SetupSpec {
        setup_commands: vec!["echo one".into(), "echo boom >&2; echo partial; exit 3".into(), "touch never".into()],
        ..Default::default()
    };
    let Err(Error::Setup(failure)) = apply_setup(&*sb.sandbox, &spec).await else { panic!("setup succeeded") };
    assert_eq!(failure.step, "echo boom >&2; echo partial; exit 3");
    assert_eq!(failure.exit_code, Some(3));
    assert!(!failure.timed_out);
    assert!(failure.output.contains("boom") && failure.output.contains("partial"), "{}", failure.output);
    assert!(!failure.output.contains("one"), "output of earlier steps belongs to the log only");
    assert!(failure.log.contains("one\n") && failure.log.contains("[exit code 3]"));
    assert!(!sb.host_path("never").exists());
}

#[tokio::test]
async fn a_hanging_setup_command_times_out_with_its_output() {
    let sb = start("setup-hang").await;
    let spec = SetupSpec {
        setup_commands: vec!["echo waiting; sleep 60".into()],
        command_timeout: Duration::from_millis(400),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let Err(Error::Setup(failure)) = apply_setup(&*sb.sandbox, &spec).await else { panic!("setup succeeded") };
    assert!(failure.timed_out);
    assert_eq!(failure.output, "waiting\n");
    assert!(failure.reason.contains("timed out"));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_setup_file_outside_workspace_or_with_bad_base64_fails() {
    let sb = start("setup-file").await;
    let escape =
        SetupSpec { files: vec![SetupFile { path: "/etc/evil".into(), data: b64("x") }], ..Default::default() };
    let Err(Error::Setup(f)) = apply_setup(&*sb.sandbox, &escape).await else { panic!() };
    assert_eq!(f.step, "write /etc/evil");
    assert!(f.reason.contains("escapes"));
    let bad = SetupSpec { files: vec![SetupFile { path: "a".into(), data: "%%%".into() }], ..Default::default() };
    let Err(Error::Setup(f)) = apply_setup(&*sb.sandbox, &bad).await else { panic!() };
    assert!(f.reason.contains("base64"));
}

/// Needs the package registries (PyPI, npm) reachable from this host, as
/// they are here and on CI.
async fn packages_install_into_the_sandbox_home(network: sandbox::NetworkPolicy, domains: &[&str]) {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_path_buf();
    let domains: Vec<String> = domains.iter().map(|d| d.to_string()).collect();
    let sb = start_with("packages", move |s| {
        s.network = network;
        s.domains = sandbox::egress::DomainPolicy::new(&domains, &[]).unwrap();
        s.home = Some(home_path);
    })
    .await;
    let spec = SetupSpec {
        packages: sandbox::Packages {
            python: vec!["six==1.16.0".into()],
            npm: vec!["is-number@7.0.0".into()],
            system: vec![],
        },
        setup_commands: vec![
            "python3 -c 'import six; print(six.__version__)'".into(),
            "node -e \"console.log(require('/root/.npm-global/lib/node_modules/is-number')(5))\"".into(),
        ],
        ..Default::default()
    };
    let log = match apply_setup(&*sb.sandbox, &spec).await {
        Ok(log) => log.log,
        Err(Error::Setup(f)) => panic!("{}\n{}", f, f.log),
        Err(e) => panic!("{e}"),
    };
    assert!(log.contains("1.16.0\n") && log.contains("true\n"), "{log}");
    assert!(home.path().join(".local/lib").is_dir(), "pip did not install into the sandbox home");
}

#[tokio::test]
async fn python_and_npm_packages_install_with_the_network_enabled() {
    packages_install_into_the_sandbox_home(sandbox::NetworkPolicy::Enabled, &[]).await;
}

#[tokio::test]
async fn python_and_npm_packages_install_through_a_restricted_networks_proxy() {
    let registries = ["pypi.org", "files.pythonhosted.org", "registry.npmjs.org"];
    packages_install_into_the_sandbox_home(sandbox::NetworkPolicy::Restricted, &registries).await;
}

#[tokio::test]
async fn a_restricted_network_without_the_registry_fails_the_install() {
    let sb = start_with("packages-denied", |s| {
        s.network = sandbox::NetworkPolicy::Restricted;
        s.domains = sandbox::egress::DomainPolicy::new(&["registry.npmjs.org".into()], &[]).unwrap();
    })
    .await;
    let spec = SetupSpec {
        packages: sandbox::Packages { python: vec!["six==1.16.0".into()], ..Default::default() },
        env: [("PIP_RETRIES".to_string(), "1".to_string())].into(),
        command_timeout: std::time::Duration::from_secs(120),
        ..Default::default()
    };
    let Err(Error::Setup(f)) = apply_setup(&*sb.sandbox, &spec).await else { panic!("pip got past the proxy") };
    assert!(f.output.contains("403") || f.output.contains("ProxyError"), "{}", f.output);
}
