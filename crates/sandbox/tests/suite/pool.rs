//! Warm agents: a sandbox built on an agent cloned ahead of need still has
//! namespaces, a cgroup and limits of its own, and the policy it asked for.

use super::support::*;
use sandbox::{NetworkPolicy, Sandbox};

#[tokio::test]
async fn a_prewarmed_agent_becomes_a_sandbox_with_namespaces_and_cgroup_of_its_own() {
    let backend = backend();
    backend.prewarm(NetworkPolicy::Disabled).await.unwrap();
    assert_eq!(backend.warm_agents(NetworkPolicy::Disabled), 1);
    let a = start_on(&backend, "warm-a", |_| {}).await;
    backend.prewarm(NetworkPolicy::Disabled).await.unwrap();
    let b = start_on(&backend, "warm-b", |s| s.limits.max_processes = Some(50)).await;

    let ns = "readlink /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/net /proc/self/ns/user";
    assert_ne!(sh(&*a.sandbox, ns).await, sh(&*b.sandbox, ns).await);
    sh(&*a.sandbox, "echo a > only-a.txt").await;
    assert!(!run(&*b.sandbox, "test -e only-a.txt").await.status.success());
    if b.cgroup_limits().1 {
        let cgroups = sh(&*b.sandbox, "cat /proc/1/cgroup").await;
        assert!(cgroups.contains(&format!("rebyte-sandboxes/{}", b.id())), "{cgroups}");
    }

    // Warm agents serve every policy: a networked sandbox built on one gets its veth.
    assert_eq!(backend.warm_agents(NetworkPolicy::Enabled), backend.warm_agents(NetworkPolicy::Disabled));
    let c = start_on(&backend, "warm-c", |s| s.network = NetworkPolicy::Enabled).await;
    let ifaces = sh(&*c.sandbox, "tail -n +3 /proc/net/dev | wc -l").await;
    assert!(ifaces.parse::<u32>().unwrap() > 1, "the networked sandbox has only loopback");
}

/// Field 41 of `/proc/<pid>/stat`: the scheduling policy (0 normal, 5 idle).
const POLICY: &str = "awk '{print $41}' /proc/1/stat /proc/self/stat | tr '\\n' ' '";

#[tokio::test]
async fn an_agent_a_refill_cloned_at_idle_priority_runs_the_sandbox_at_normal_priority() {
    let backend = backend();
    backend.prewarm(NetworkPolicy::Disabled).await.unwrap();
    // Taking the prewarmed agent starts a refill on a thread of its own.
    let _first = start_on(&backend, "refill-a", |_| {}).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while backend.warm_agents(NetworkPolicy::Disabled) == 0 {
        assert!(std::time::Instant::now() < deadline, "the pool was not refilled");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let refilled = start_on(&backend, "refill-b", |_| {}).await;
    assert_eq!(sh(&*refilled.sandbox, POLICY).await.trim(), "0 0", "the agent and its commands at SCHED_OTHER");
}

/// What a command holds of the agent's privileges and signal mask.
const STATUS: &str =
    "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|SigBlk):' /proc/self/status | tr -s '\\t ' ' '";

/// The `pids` line of a `/proc/…/cgroup` (cgroup v1 only), if any.
fn pids_line(cgroups: &str) -> Option<&str> {
    cgroups.lines().find(|l| l.split(':').nth(1).is_some_and(|c| c.split(',').any(|c| c == "pids")))
}

#[tokio::test]
async fn commands_start_in_the_commands_cgroup_and_hold_none_of_the_agents_privileges() {
    let warm_backend = backend();
    warm_backend.prewarm(NetworkPolicy::Disabled).await.unwrap();
    let mut config = sandbox::LocalConfig::with_agent(env!("CARGO_BIN_EXE_rebyte-sandbox-agent"), vec![]);
    config.warm_agents = 0;
    let cold_backend = sandbox::LocalBackend::new(config);
    let warm = start_on(&warm_backend, "spawn-warm", |s| s.limits.max_processes = Some(50)).await;
    let cold = start_on(&cold_backend, "spawn-cold", |s| s.limits.max_processes = Some(50)).await;
    for sb in [&warm, &cold] {
        // Forked by the spawn thread, which locked itself down as the agent did.
        let zero = "0000000000000000";
        let expected = format!(
            "SigBlk: {zero}\nCapInh: {zero}\nCapPrm: {zero}\nCapEff: {zero}\nCapBnd: {zero}\nCapAmb: {zero}\nNoNewPrivs: 1\nSeccomp: 2"
        );
        assert_eq!(sh(&*sb.sandbox, STATUS).await, expected, "{}", sb.id());
        let own = sh(&*sb.sandbox, "cat /proc/self/cgroup").await;
        let Some(line) = pids_line(&own).filter(|_| sb.cgroup_limits().1) else {
            println!("skipped the cgroup half: no v1 pids cgroup");
            continue;
        };
        assert!(line.contains(sb.id()) && line.ends_with("/commands"), "{line}");
        // The agent's spawn thread alone is there; its main thread is in the sandbox's own.
        let tasks = std::fs::read_dir(format!("/proc/{}/task", sb.agent_pid())).unwrap();
        let mut threads = Vec::new();
        for task in tasks.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap();
            let cgroups = std::fs::read_to_string(task.path().join("cgroup")).unwrap();
            threads.push((comm.trim().to_string(), pids_line(&cgroups).unwrap().to_string()));
        }
        threads.sort();
        assert_eq!(threads.len(), 2, "{threads:?}");
        assert!(threads.iter().any(|(c, l)| c == "rebyte-spawn" && l.ends_with("/commands")), "{threads:?}");
        assert!(threads.iter().any(|(c, l)| c != "rebyte-spawn" && !l.ends_with("/commands")), "{threads:?}");
    }
}
