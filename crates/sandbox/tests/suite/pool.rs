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
