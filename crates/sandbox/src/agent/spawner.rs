//! The agent's spawn thread, which forks its commands. The host moves this
//! thread alone into the sandbox's `commands` cgroup (cgroup v1 moves single
//! threads) while a warm agent waits in the pool, so every command forked
//! here starts in that cgroup with no move of its own: on v1 the first move
//! after a quiet moment waits for an RCU grace period (5–13 ms), which each
//! command paid before.
//!
//! The thread starts before the agent has read its init, so it holds the
//! agent's privileges until the root is built; it then locks itself down as
//! the agent does (no new privileges, no capabilities, the seccomp filter:
//! each is per thread) and forks nothing before that. It blocks `SIGCHLD`,
//! which stays the main thread's, whose loop reaps every child (the
//! children themselves start with no signal blocked).

use crate::wire::SPAWN_THREAD;
use std::process::{Child, Command};
use std::sync::mpsc;

type Lockdown = Box<dyn FnOnce() -> Result<(), String> + Send>;

enum Job {
    Lockdown(Lockdown),
    Spawn(Box<Command>),
}

enum Reply {
    Locked(Result<(), String>),
    Spawned(std::io::Result<Child>),
}

/// The spawn thread's end in the main thread: one job at a time, each
/// answered before the next is sent.
pub(super) struct Spawner {
    jobs: mpsc::Sender<Job>,
    replies: mpsc::Receiver<Reply>,
}

impl Spawner {
    /// Starts the thread (named [`SPAWN_THREAD`], which the host looks for).
    pub fn start() -> std::io::Result<Spawner> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (reply_tx, replies) = mpsc::channel();
        std::thread::Builder::new().name(SPAWN_THREAD.into()).spawn(move || {
            let mut mask = nix::sys::signal::SigSet::empty();
            mask.add(nix::sys::signal::Signal::SIGCHLD);
            let _ = mask.thread_block();
            let mut locked = false;
            for job in job_rx {
                let reply = match job {
                    Job::Lockdown(lockdown) => {
                        let done = lockdown();
                        locked = done.is_ok();
                        Reply::Locked(done)
                    }
                    Job::Spawn(mut cmd) if locked => Reply::Spawned(cmd.spawn()),
                    Job::Spawn(_) => Reply::Spawned(Err(std::io::Error::other("the spawn thread was not locked down"))),
                };
                if reply_tx.send(reply).is_err() {
                    break;
                }
            }
        })?;
        Ok(Spawner { jobs, replies })
    }

    fn ask(&self, job: Job) -> Option<Reply> {
        self.jobs.send(job).ok()?;
        self.replies.recv().ok()
    }

    /// Runs `lockdown` on the spawn thread; it forks only once that succeeded.
    pub fn lock_down(&self, lockdown: impl FnOnce() -> Result<(), String> + Send + 'static) -> Result<(), String> {
        match self.ask(Job::Lockdown(Box::new(lockdown))) {
            Some(Reply::Locked(done)) => done,
            _ => Err("the spawn thread is gone".into()),
        }
    }

    /// Spawns `cmd` from the spawn thread.
    pub fn spawn(&self, cmd: Command) -> std::io::Result<Child> {
        match self.ask(Job::Spawn(Box::new(cmd))) {
            Some(Reply::Spawned(spawned)) => spawned,
            _ => Err(std::io::Error::other("the spawn thread is gone")),
        }
    }
}
