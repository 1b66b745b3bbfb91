//! The agent's end of the control channel: a non-blocking fd with an input
//! buffer that yields whole frames and an output buffer flushed when the
//! host can take more.

use crate::error::{Error, Result};
use crate::wire::Frame;
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

pub(super) struct Control {
    fd: OwnedFd,
    inbuf: Vec<u8>,
    in_pos: usize,
    out: Vec<u8>,
    out_pos: usize,
    /// The host closed its end: the sandbox has no owner any more.
    pub eof: bool,
}

impl Control {
    pub fn new(fd: OwnedFd) -> Result<Control> {
        // Close-on-exec: no command may inherit (and write to) the channel.
        fcntl(&fd, FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))?;
        let flags = fcntl(&fd, FcntlArg::F_GETFL)?;
        fcntl(&fd, FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK))?;
        Ok(Control { fd, inbuf: Vec::new(), in_pos: 0, out: Vec::new(), out_pos: 0, eof: false })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    pub fn send(&mut self, frame: &Frame) {
        frame.encode_into(&mut self.out);
    }

    pub fn wants_write(&self) -> bool {
        self.out_pos < self.out.len()
    }

    /// Bytes queued for the host and not yet written.
    pub fn backlog(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// Writes what the socket takes now.
    pub fn flush(&mut self) -> Result<()> {
        while self.out_pos < self.out.len() {
            match nix::unistd::write(&self.fd, &self.out[self.out_pos..]) {
                Ok(n) => self.out_pos += n,
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
            if self.out.capacity() > 1 << 20 {
                self.out.shrink_to(64 << 10);
            }
        } else if self.out_pos > self.out.len() / 2 {
            self.out.drain(..self.out_pos);
            self.out_pos = 0;
        }
        Ok(())
    }

    /// Flushes everything, waiting for the socket (setup failures, shutdown).
    pub fn flush_blocking(&mut self) -> Result<()> {
        while self.wants_write() {
            self.flush()?;
            if self.wants_write() {
                wait(self.fd.as_fd(), nix::poll::PollFlags::POLLOUT)?;
            }
        }
        Ok(())
    }

    /// Reads what is available now into the input buffer.
    pub fn read_some(&mut self) -> Result<()> {
        let mut chunk = [0u8; 16 << 10];
        loop {
            match nix::unistd::read(&self.fd, &mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => self.inbuf.extend_from_slice(&chunk[..n]),
                Err(Errno::EAGAIN) => return Ok(()),
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The next whole frame in the input buffer.
    pub fn next_frame(&mut self) -> Result<Option<Frame>> {
        match Frame::decode(&self.inbuf[self.in_pos..])? {
            Some((frame, used)) => {
                self.in_pos += used;
                if self.in_pos == self.inbuf.len() {
                    self.inbuf.clear();
                    self.in_pos = 0;
                    if self.inbuf.capacity() > 1 << 20 {
                        self.inbuf.shrink_to(64 << 10);
                    }
                }
                Ok(Some(frame))
            }
            None => {
                if self.in_pos > 0 {
                    self.inbuf.drain(..self.in_pos);
                    self.in_pos = 0;
                }
                Ok(None)
            }
        }
    }

    /// Waits for one whole frame (the init frame, before the loop starts).
    pub fn read_blocking(&mut self) -> Result<Option<Frame>> {
        loop {
            if let Some(frame) = self.next_frame()? {
                return Ok(Some(frame));
            }
            if self.eof {
                return Ok(None);
            }
            wait(self.fd.as_fd(), nix::poll::PollFlags::POLLIN)?;
            self.read_some()?;
        }
    }
}

fn wait(fd: BorrowedFd<'_>, events: nix::poll::PollFlags) -> Result<()> {
    let mut fds = [nix::poll::PollFd::new(fd, events)];
    match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
        Ok(_) | Err(Errno::EINTR) => Ok(()),
        Err(e) => Err(Error::from(e)),
    }
}
