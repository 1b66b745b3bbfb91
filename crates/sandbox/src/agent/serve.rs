//! The agent's loop: one `poll` over the control channel, SIGCHLD (a
//! signalfd), every child's pipes and the orphaned pipes; requests are
//! dispatched in order and answered on the same channel.

use super::control::Control;
use super::files;
use super::procs::{Procs, Stream};
use super::relay::{RelaySlot, Relays};
use crate::wire::{ErrorKind, Exited, Frame, Kind, Reply, Request, WireError};
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::Pid;
use std::os::fd::AsFd;
use std::time::Instant;

/// Largest chunk of output per frame.
const CHUNK: usize = 64 << 10;
/// Stop reading children's pipes while this much is queued for the host.
const MAX_BACKLOG: usize = 4 << 20;

#[derive(Clone, Copy)]
enum Slot {
    Control,
    Signal,
    Out(u32, Stream),
    In(u32),
    Orphan(usize),
    Relay(RelaySlot),
}

struct Agent {
    ctl: Control,
    procs: Procs,
    relays: Relays,
    buf: Vec<u8>,
}

/// Serves until the host goes away or asks for shutdown; never returns.
pub(super) fn run(ctl: Control, procs: Procs, relays: Relays) -> ! {
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    let sigfd =
        mask.thread_block().and_then(|()| SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC));
    let sigfd = match sigfd {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("rebyte sandbox agent: signalfd: {e}");
            std::process::exit(1);
        }
    };
    let mut agent = Agent { ctl, procs, relays, buf: Vec::new() };
    loop {
        if let Err(e) = agent.ctl.flush() {
            eprintln!("rebyte sandbox agent: control channel: {e}");
            std::process::exit(1);
        }
        let now = Instant::now();
        agent.procs.enforce_deadlines(now);
        let timeout = agent
            .procs
            .next_deadline()
            .map(|d| PollTimeout::try_from(d.saturating_duration_since(now)).unwrap_or(PollTimeout::MAX))
            .unwrap_or(PollTimeout::NONE);
        let ready = agent.wait(&sigfd, timeout);
        for (slot, revents) in ready {
            agent.handle(slot, revents, &sigfd);
        }
        if agent.ctl.eof {
            // The host is gone: exiting as PID 1 kills the whole sandbox.
            std::process::exit(0);
        }
    }
}

impl Agent {
    /// Polls every fd of interest; returns the ready ones.
    fn wait(&mut self, sigfd: &SignalFd, timeout: PollTimeout) -> Vec<(Slot, PollFlags)> {
        let mut fds = Vec::with_capacity(2 + self.procs.map.len() * 2 + self.procs.orphans.len());
        let mut slots = Vec::with_capacity(fds.capacity());
        let mut ctl_events = PollFlags::POLLIN;
        if self.ctl.wants_write() {
            ctl_events |= PollFlags::POLLOUT;
        }
        fds.push(PollFd::new(self.ctl.fd(), ctl_events));
        slots.push(Slot::Control);
        fds.push(PollFd::new(sigfd.as_fd(), PollFlags::POLLIN));
        slots.push(Slot::Signal);
        let room = self.ctl.backlog() < MAX_BACKLOG;
        for (&id, p) in &self.procs.map {
            if room && p.window_open() {
                for (stream, fd) in [(Stream::Stdout, &p.stdout), (Stream::Stderr, &p.stderr)] {
                    if let Some(fd) = fd {
                        fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
                        slots.push(Slot::Out(id, stream));
                    }
                }
            }
            if let Some(fd) = &p.stdin
                && !p.stdin_buf.is_empty()
            {
                fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLOUT));
                slots.push(Slot::In(id));
            }
        }
        for (i, fd) in self.procs.orphans.iter().enumerate() {
            fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
            slots.push(Slot::Orphan(i));
        }
        let mut relay_slots = Vec::new();
        self.relays.poll_fds(&mut fds, &mut relay_slots);
        slots.extend(relay_slots.into_iter().map(Slot::Relay));
        match poll(&mut fds, timeout) {
            Ok(_) => {}
            Err(Errno::EINTR) => return Vec::new(),
            Err(e) => {
                eprintln!("rebyte sandbox agent: poll: {e}");
                std::process::exit(1);
            }
        }
        let mut ready: Vec<(Slot, PollFlags)> = fds
            .iter()
            .zip(slots)
            .filter_map(|(fd, slot)| fd.revents().filter(|r| !r.is_empty()).map(|r| (slot, r)))
            .collect();
        // Orphans are removed by index: handle them from the highest down.
        ready.sort_by_key(|(slot, _)| match slot {
            Slot::Orphan(i) => usize::MAX - i,
            _ => 0,
        });
        ready
    }

    fn handle(&mut self, slot: Slot, revents: PollFlags, sigfd: &SignalFd) {
        match slot {
            Slot::Control => {
                if revents.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) {
                    if self.ctl.read_some().is_err() {
                        self.ctl.eof = true;
                    }
                    loop {
                        match self.ctl.next_frame() {
                            Ok(Some(frame)) => self.dispatch(frame),
                            Ok(None) => break,
                            Err(_) => {
                                self.ctl.eof = true;
                                break;
                            }
                        }
                    }
                }
            }
            Slot::Signal => {
                while let Ok(Some(_)) = sigfd.read_signal() {}
                for (id, exited) in self.procs.reap() {
                    self.finish(id, exited);
                }
            }
            Slot::Out(id, stream) => self.pump(id, stream, false),
            Slot::In(id) => self.feed(id),
            Slot::Relay(slot) => self.relays.handle(slot),
            Slot::Orphan(i) => {
                let fd = &self.procs.orphans[i];
                let keep = loop {
                    self.buf.resize(CHUNK, 0);
                    match nix::unistd::read(fd, &mut self.buf) {
                        Ok(0) => break false,
                        Ok(_) => continue,
                        Err(Errno::EAGAIN) => break true,
                        Err(Errno::EINTR) => continue,
                        Err(_) => break false,
                    }
                };
                if !keep {
                    self.procs.orphans.swap_remove(i);
                }
            }
        }
    }

    /// Moves output from a child's pipe to the host: one chunk, or
    /// everything available when `drain` (the child exited).
    fn pump(&mut self, id: u32, stream: Stream, drain: bool) {
        let Some(p) = self.procs.map.get_mut(&id) else { return };
        loop {
            let Some(fd) = p.pipe(stream).as_ref() else { return };
            self.buf.resize(CHUNK, 0);
            match nix::unistd::read(fd, &mut self.buf) {
                Ok(0) => {
                    *p.pipe(stream) = None;
                    return;
                }
                Ok(n) => {
                    if !p.detached {
                        let kind = if stream == Stream::Stdout { Kind::Stdout } else { Kind::Stderr };
                        self.ctl.send(&Frame::data(kind, id, self.buf[..n].to_vec()));
                        p.sent(n);
                    }
                    if !drain {
                        return;
                    }
                }
                Err(Errno::EINTR) => continue,
                Err(Errno::EAGAIN) => return,
                Err(_) => {
                    *p.pipe(stream) = None;
                    return;
                }
            }
        }
    }

    fn feed(&mut self, id: u32) {
        let Some(p) = self.procs.map.get_mut(&id) else { return };
        let Some(fd) = &p.stdin else { return };
        match nix::unistd::write(fd, &p.stdin_buf) {
            Ok(n) => {
                p.stdin_buf.drain(..n);
            }
            Err(Errno::EAGAIN) | Err(Errno::EINTR) => return,
            Err(_) => {
                p.stdin_buf.clear();
                p.stdin = None;
            }
        }
        p.settle_stdin();
    }

    /// A tracked process ended: send what is left in its pipes, then its exit.
    fn finish(&mut self, id: u32, exited: Exited) {
        self.pump(id, Stream::Stdout, true);
        self.pump(id, Stream::Stderr, true);
        self.procs.remove(id);
        if let Ok(frame) = Frame::json(Kind::Exited, id, &exited, Vec::new()) {
            self.ctl.send(&frame);
        }
    }

    fn reply(&mut self, id: u32, result: Result<Reply, WireError>, data: Vec<u8>) {
        let reply = result.unwrap_or_else(Reply::Error);
        if let Ok(frame) = Frame::json(Kind::Reply, id, &reply, data) {
            self.ctl.send(&frame);
        }
    }

    fn dispatch(&mut self, frame: Frame) {
        let id = frame.id;
        match frame.kind {
            Kind::Request => {}
            Kind::Stdin => return self.procs.stdin_data(id, frame.data),
            Kind::StdinEof => return self.procs.stdin_eof(id),
            Kind::Ack => {
                let n = frame.data.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes).unwrap_or(0);
                return self.procs.ack(id, n);
            }
            _ => return,
        }
        let request = match frame.parse::<Request>() {
            Ok(r) => r,
            Err(e) => return self.reply(id, Err(WireError::new(ErrorKind::BadRequest, e.to_string())), Vec::new()),
        };
        match request {
            Request::Exec(spec) => {
                let r = self.procs.spawn(id, &spec).map(|pid| Reply::Started { pid });
                self.reply(id, r, Vec::new());
            }
            Request::Kill { process, signal } => {
                let r = self.procs.kill(process, signal).map(|()| Reply::Ok);
                self.reply(id, r, Vec::new());
            }
            Request::ReadFile { path, max_bytes } => match files::read(&path, max_bytes) {
                Ok(data) => self.reply(id, Ok(Reply::File { size: data.len() as u64 }), data),
                Err(e) => self.reply(id, Err(e), Vec::new()),
            },
            Request::WriteFile { path, max_bytes } => {
                let r = files::write(&path, max_bytes, &frame.data).map(|()| Reply::Ok);
                self.reply(id, r, Vec::new());
            }
            Request::ListDir { path } => {
                let r = files::list(&path).map(|entries| Reply::Entries { entries });
                self.reply(id, r, Vec::new());
            }
            Request::MakeDir { path } => {
                let r = files::make_dir(&path).map(|()| Reply::Ok);
                self.reply(id, r, Vec::new());
            }
            Request::Delete { path } => {
                let r = files::delete(&path).map(|()| Reply::Ok);
                self.reply(id, r, Vec::new());
            }
            Request::SetEnv { vars } => {
                self.procs.env.extend(vars);
                self.reply(id, Ok(Reply::Ok), Vec::new());
            }
            Request::Pause | Request::Resume => {
                let sig = if matches!(request, Request::Pause) { Signal::SIGSTOP } else { Signal::SIGCONT };
                // From PID 1, pid -1 reaches every other process in the namespace.
                let r = match kill(Pid::from_raw(-1), sig) {
                    Ok(()) | Err(Errno::ESRCH) => Ok(Reply::Ok),
                    Err(e) => Err(WireError::new(ErrorKind::Io, format!("{sig}: {e}"))),
                };
                self.reply(id, r, Vec::new());
            }
            Request::Shutdown => {
                self.reply(id, Ok(Reply::Ok), Vec::new());
                let _ = self.ctl.flush_blocking();
                std::process::exit(0);
            }
        }
    }
}
