//! A DNS forwarder on an `enabled` sandbox's veth address (port 53, UDP
//! and TCP): the sandbox's `/etc/resolv.conf` names it, and it passes each
//! query to the host's first resolver (often a loopback or private address
//! the sandbox itself may not reach). Bytes are relayed, never parsed.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// How long one query (UDP) or one connection (TCP) may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Queries and connections in flight per sandbox.
const IN_FLIGHT: usize = 128;

/// The host's first `nameserver` (`/etc/resolv.conf`), port 53.
pub(crate) fn host_resolver() -> Option<SocketAddr> {
    let text = std::fs::read_to_string("/etc/resolv.conf").ok()?;
    resolver_in(&text)
}

fn resolver_in(text: &str) -> Option<SocketAddr> {
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some("nameserver"))
            .then(|| words.next()?.parse().ok())
            .flatten()
            .map(|ip| SocketAddr::new(ip, 53))
    })
}

/// The sandbox's resolv.conf: only the forwarder.
pub(crate) fn resolv_conf(forwarder: Ipv4Addr) -> String {
    format!("# written by rebyte: the sandbox's DNS forwarder\nnameserver {forwarder}\noptions edns0\n")
}

/// Binds both sockets now (the address must be up), serving in the tasks returned.
pub(crate) fn start(at: Ipv4Addr, upstream: SocketAddr) -> std::io::Result<Vec<tokio::task::AbortHandle>> {
    let udp = std::net::UdpSocket::bind((at, 53))?;
    udp.set_nonblocking(true)?;
    let tcp = std::net::TcpListener::bind((at, 53))?;
    tcp.set_nonblocking(true)?;
    let (udp, tcp) = (UdpSocket::from_std(udp)?, TcpListener::from_std(tcp)?);
    let limit = Arc::new(Semaphore::new(IN_FLIGHT));
    let a = tokio::spawn(serve_udp(Arc::new(udp), upstream, limit.clone()));
    let b = tokio::spawn(serve_tcp(tcp, upstream, limit));
    Ok(vec![a.abort_handle(), b.abort_handle()])
}

async fn serve_udp(socket: Arc<UdpSocket>, upstream: SocketAddr, limit: Arc<Semaphore>) {
    // Dropped with this task when the sandbox goes: every query in flight stops too.
    let mut queries = JoinSet::new();
    let mut buf = vec![0u8; 4096];
    loop {
        while queries.try_join_next().is_some() {}
        let Ok((n, client)) = socket.recv_from(&mut buf).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = limit.clone().try_acquire_owned() else { continue };
        let (query, socket) = (buf[..n].to_vec(), socket.clone());
        queries.spawn(async move {
            let _permit = permit;
            if let Ok(Ok(answer)) = tokio::time::timeout(TIMEOUT, ask(&query, upstream)).await {
                let _ = socket.send_to(&answer, client).await;
            }
        });
    }
}

async fn ask(query: &[u8], upstream: SocketAddr) -> std::io::Result<Vec<u8>> {
    let local: SocketAddr = if upstream.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
    let socket = UdpSocket::bind(local).await?;
    socket.connect(upstream).await?;
    socket.send(query).await?;
    let mut buf = vec![0u8; 65535];
    let n = socket.recv(&mut buf).await?;
    buf.truncate(n);
    Ok(buf)
}

async fn serve_tcp(listener: TcpListener, upstream: SocketAddr, limit: Arc<Semaphore>) {
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok((mut client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = limit.clone().try_acquire_owned() else { continue };
        connections.spawn(async move {
            let _permit = permit;
            let relay = async {
                let mut server = TcpStream::connect(upstream).await?;
                tokio::io::copy_bidirectional(&mut client, &mut server).await
            };
            let _ = tokio::time::timeout(TIMEOUT, relay).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_nameserver_is_the_upstream() {
        let text = "# c\nsearch x\nnameserver 10.255.255.53\nnameserver 8.8.8.8\n";
        assert_eq!(resolver_in(text), Some("10.255.255.53:53".parse().unwrap()));
        assert_eq!(resolver_in("nameserver ::1\n"), Some("[::1]:53".parse().unwrap()));
        assert_eq!(resolver_in("search x\n"), None);
    }
}
