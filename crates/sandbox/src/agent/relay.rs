//! Byte relays the agent keeps between the sandbox's network namespace and
//! the host, inside its poll loop:
//!
//! - the egress port (restricted network): TCP `127.0.0.1:<port>` in the
//!   sandbox, each connection relayed to the host's proxy socket;
//! - the dial socket: a Unix socket the host connects to, says
//!   `<ipv4> <port>\n`, and is relayed to that address as seen from the
//!   sandbox's network namespace (its own loopback; anything an enabled
//!   network reaches, under the host's rules) after an `ok\n` (or told
//!   `error <reason>\n`).
//!
//! Each relay buffers at most [`CAP`] bytes per direction; a full buffer
//! stops reading that side. Half-closes are passed on.

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags};
use nix::sys::socket::{
    AddressFamily, Shutdown, SockFlag, SockType, SockaddrIn, connect, getsockopt, shutdown, socket, sockopt,
};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;

/// Bytes buffered per direction of one relay.
const CAP: usize = 256 << 10;
/// Longest dial request line.
const MAX_LINE: usize = 64;

/// Which fd of the relays a poll slot names.
#[derive(Debug, Clone, Copy)]
pub(super) enum RelaySlot {
    EgressListener,
    DialListener,
    /// Either side of one relay.
    Pair(u32),
}

enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Conn::Tcp(s) => s.as_fd(),
            Conn::Unix(s) => s.as_fd(),
        }
    }

    fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => (&*s).read(buf),
            Conn::Unix(s) => (&*s).read(buf),
        }
    }

    fn write(&self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => (&*s).write(buf),
            Conn::Unix(s) => (&*s).write(buf),
        }
    }

    fn shutdown_write(&self) {
        let _ = shutdown(self.fd_raw(), Shutdown::Write);
    }

    fn fd_raw(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd().as_raw_fd()
    }
}

enum Phase {
    /// Reading the dial request line from `a`.
    Request(Vec<u8>),
    /// `b` is connecting.
    Connecting,
    Open,
}

struct Pair {
    a: Conn,
    b: Option<Conn>,
    phase: Phase,
    a2b: Vec<u8>,
    b2a: Vec<u8>,
    a_eof: bool,
    b_eof: bool,
    a_shut: bool,
    b_shut: bool,
}

impl Pair {
    fn open(a: Conn, b: Conn) -> Pair {
        Pair { b: Some(b), phase: Phase::Open, ..Pair::dialing(a) }
    }

    /// A dial connection still to send its request line.
    fn dialing(a: Conn) -> Pair {
        Pair {
            a,
            b: None,
            phase: Phase::Request(Vec::new()),
            a2b: Vec::new(),
            b2a: Vec::new(),
            a_eof: false,
            b_eof: false,
            a_shut: false,
            b_shut: false,
        }
    }
}

#[derive(Default)]
pub(super) struct Relays {
    egress: Option<(TcpListener, PathBuf)>,
    dial: Option<UnixListener>,
    pairs: HashMap<u32, Pair>,
    next: u32,
}

impl Relays {
    /// Listens on `127.0.0.1:port` (in the sandbox) for the egress proxy,
    /// relaying to `socket` (a path inside the sandbox).
    pub fn listen_egress(&mut self, port: u16, socket: PathBuf) -> std::io::Result<()> {
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))?;
        listener.set_nonblocking(true)?;
        self.egress = Some((listener, socket));
        Ok(())
    }

    /// Serves dial requests on a Unix socket created at `path`.
    pub fn listen_dial(&mut self, path: &str) -> std::io::Result<()> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        self.dial = Some(listener);
        Ok(())
    }

    /// Adds what to poll for.
    pub fn poll_fds<'a>(&'a self, fds: &mut Vec<PollFd<'a>>, slots: &mut Vec<RelaySlot>) {
        if let Some((l, _)) = &self.egress {
            fds.push(PollFd::new(l.as_fd(), PollFlags::POLLIN));
            slots.push(RelaySlot::EgressListener);
        }
        if let Some(l) = &self.dial {
            fds.push(PollFd::new(l.as_fd(), PollFlags::POLLIN));
            slots.push(RelaySlot::DialListener);
        }
        for (&id, p) in &self.pairs {
            let mut a = PollFlags::empty();
            let mut b = PollFlags::empty();
            match p.phase {
                Phase::Request(_) => a |= PollFlags::POLLIN,
                Phase::Connecting => b |= PollFlags::POLLOUT,
                Phase::Open => {
                    if !p.a_eof && p.a2b.len() < CAP {
                        a |= PollFlags::POLLIN;
                    }
                    if !p.b2a.is_empty() {
                        a |= PollFlags::POLLOUT;
                    }
                    if !p.b_eof && p.b2a.len() < CAP {
                        b |= PollFlags::POLLIN;
                    }
                    if !p.a2b.is_empty() {
                        b |= PollFlags::POLLOUT;
                    }
                }
            }
            if !a.is_empty() {
                fds.push(PollFd::new(p.a.fd(), a));
                slots.push(RelaySlot::Pair(id));
            }
            if let (false, Some(conn)) = (b.is_empty(), &p.b) {
                fds.push(PollFd::new(conn.fd(), b));
                slots.push(RelaySlot::Pair(id));
            }
        }
    }

    pub fn handle(&mut self, slot: RelaySlot) {
        match slot {
            RelaySlot::EgressListener => self.accept_egress(),
            RelaySlot::DialListener => self.accept_dial(),
            RelaySlot::Pair(id) => self.progress(id),
        }
    }

    fn insert(&mut self, pair: Pair) {
        self.next = self.next.wrapping_add(1);
        self.pairs.insert(self.next, pair);
    }

    fn accept_egress(&mut self) {
        let Some((listener, socket)) = &self.egress else { return };
        let mut pairs = Vec::new();
        while let Ok((tcp, _)) = listener.accept() {
            let up = UnixStream::connect(socket);
            let pair = up.and_then(|up| {
                tcp.set_nonblocking(true)?;
                up.set_nonblocking(true)?;
                let _ = tcp.set_nodelay(true);
                Ok(Pair::open(Conn::Tcp(tcp), Conn::Unix(up)))
            });
            pairs.extend(pair.ok());
        }
        for pair in pairs {
            self.insert(pair);
        }
    }

    fn accept_dial(&mut self) {
        let Some(listener) = &self.dial else { return };
        let mut accepted = Vec::new();
        while let Ok((conn, _)) = listener.accept() {
            if conn.set_nonblocking(true).is_ok() {
                accepted.push(conn);
            }
        }
        for conn in accepted {
            self.insert(Pair::dialing(Conn::Unix(conn)));
        }
    }

    /// Moves whatever can move for one relay; drops it when it is done.
    fn progress(&mut self, id: u32) {
        let Some(p) = self.pairs.get_mut(&id) else { return };
        let keep = match p.phase {
            Phase::Request(_) => read_request(p),
            Phase::Connecting => finish_connect(p),
            Phase::Open => pump(p),
        };
        if !keep {
            self.pairs.remove(&id);
        }
    }
}

/// Reads the dial request; starts the connection once the line is whole.
fn read_request(p: &mut Pair) -> bool {
    let mut chunk = [0u8; MAX_LINE];
    let line = loop {
        let Phase::Request(buf) = &mut p.phase else { return true };
        if let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line = String::from_utf8_lossy(&buf[..end]).into_owned();
            // Bytes after the line are the first the caller sends upstream.
            p.a2b.extend_from_slice(&buf[end + 1..]);
            break line;
        }
        if buf.len() > MAX_LINE {
            return refuse(p, "request line too long");
        }
        match p.a.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    };
    let mut parts = line.split(' ');
    let addr = match (parts.next().map(str::parse::<Ipv4Addr>), parts.next().map(str::parse::<u16>), parts.next()) {
        (Some(Ok(ip)), Some(Ok(port)), None) if !ip.is_unspecified() => SocketAddrV4::new(ip, port),
        _ => return refuse(p, "expected `<ipv4> <port>`"),
    };
    let fd = match socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC, None)
    {
        Ok(fd) => fd,
        Err(e) => return refuse(p, &format!("socket: {e}")),
    };
    use std::os::fd::AsRawFd;
    match connect(fd.as_raw_fd(), &SockaddrIn::from(addr)) {
        Ok(()) => connected(p, fd),
        Err(Errno::EINPROGRESS) | Err(Errno::EAGAIN) => {
            p.b = Some(Conn::Tcp(TcpStream::from(fd)));
            p.phase = Phase::Connecting;
            true
        }
        Err(e) => refuse(p, &format!("connect {addr}: {}", e.desc())),
    }
}

fn finish_connect(p: &mut Pair) -> bool {
    let Some(conn) = p.b.take() else { return false };
    let fd: OwnedFd = match conn {
        Conn::Tcp(s) => s.into(),
        Conn::Unix(s) => s.into(),
    };
    match getsockopt(&fd, sockopt::SocketError) {
        Ok(0) => connected(p, fd),
        Ok(errno) => refuse(p, &format!("connect: {}", Errno::from_raw(errno).desc())),
        Err(e) => refuse(p, &format!("connect: {e}")),
    }
}

fn connected(p: &mut Pair, fd: OwnedFd) -> bool {
    let tcp = TcpStream::from(fd);
    let _ = tcp.set_nodelay(true);
    p.b = Some(Conn::Tcp(tcp));
    p.phase = Phase::Open;
    p.b2a.extend_from_slice(b"ok\n");
    pump(p)
}

/// Tells the dialer why, best effort, and drops the relay.
fn refuse(p: &mut Pair, why: &str) -> bool {
    let _ = p.a.write(format!("error {why}\n").as_bytes());
    false
}

/// Moves bytes both ways until nothing more moves now; passes half-closes
/// on. False once both directions are finished, or on an error.
fn pump(p: &mut Pair) -> bool {
    let Some(b) = &p.b else { return false };
    let mut chunk = vec![0u8; 64 << 10];
    let ok = transfer(&p.a, b, &mut p.a2b, &mut p.a_eof, &mut chunk)
        && transfer(b, &p.a, &mut p.b2a, &mut p.b_eof, &mut chunk);
    if !ok {
        return false;
    }
    if p.a_eof && p.a2b.is_empty() && !p.b_shut {
        b.shutdown_write();
        p.b_shut = true;
    }
    if p.b_eof && p.b2a.is_empty() && !p.a_shut {
        p.a.shutdown_write();
        p.a_shut = true;
    }
    !(p.a_shut && p.b_shut)
}

/// Reads `from` into `buf` (up to [`CAP`]) and writes `buf` to `to`.
fn transfer(from: &Conn, to: &Conn, buf: &mut Vec<u8>, eof: &mut bool, chunk: &mut [u8]) -> bool {
    loop {
        let mut moved = false;
        while !*eof && buf.len() < CAP {
            let room = (CAP - buf.len()).min(chunk.len());
            match from.read(&mut chunk[..room]) {
                Ok(0) => *eof = true,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    moved = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        while !buf.is_empty() {
            match to.write(buf) {
                Ok(0) => return false,
                Ok(n) => {
                    buf.drain(..n);
                    moved = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        if !moved || buf.len() >= CAP {
            return true;
        }
    }
}
