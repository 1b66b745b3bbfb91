//! The HTTP proxy in front of an [`Egress`]: `CONNECT host:port` tunnels and
//! absolute-form `http://` requests (forwarded with `Connection: close`, so a
//! client never reuses one upstream connection for another host). A denied
//! destination answers 403 with the policy's reason, an unreachable one 502.
//! Served on the sandbox's egress socket (its processes reach it through
//! the agent's port) and, with a password, on a host port for the server's
//! own environment-origin clients.

use super::{Egress, EgressError};
use base64::Engine;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest request head a client may send.
const MAX_HEAD: usize = 16 << 10;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves proxy clients from the sandbox (its egress socket) until the
/// listener fails or the task is aborted.
pub async fn serve_unix(listener: tokio::net::UnixListener, egress: Arc<Egress>) {
    while let Ok((stream, _)) = listener.accept().await {
        let egress = egress.clone();
        tokio::spawn(async move { handle(stream, &egress, None).await });
    }
}

/// Serves proxy clients on a host port; each must send `Proxy-Authorization`
/// with `user:password` (Basic).
pub async fn serve_tcp(listener: tokio::net::TcpListener, egress: Arc<Egress>, user: &str, password: &str) {
    let expected: Arc<str> =
        Arc::from(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))));
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        let (egress, expected) = (egress.clone(), expected.clone());
        tokio::spawn(async move { handle(stream, &egress, Some(&expected)).await });
    }
}

pub(super) struct Head {
    pub method: String,
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

pub(super) fn parse_head(bytes: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.split("\r\n");
    let mut parts = lines.next()?.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    Some(Head { method: method.into(), target: target.into(), version: version.into(), headers })
}

/// `host:port` (IPv6 in brackets), the port defaulting to `default`.
fn split_authority(authority: &str, default: Option<u16>) -> Option<(String, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default?,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => Some((host.to_string(), port.parse().ok()?)),
        Some(_) => None,
        None if !authority.is_empty() => Some((authority.to_string(), default?)),
        None => None,
    }
}

pub(super) async fn respond<S: AsyncWrite + Unpin>(client: &mut S, status: &str, extra: &str, body: &str) {
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{body}",
        body.len()
    );
    let _ = client.write_all(reply.as_bytes()).await;
    let _ = client.shutdown().await;
}

/// Reads the request head; returns it with any bytes that followed it.
pub(super) async fn read_head<S: AsyncRead + Unpin>(client: &mut S) -> Option<(Vec<u8>, Vec<u8>)> {
    tokio::time::timeout(HEAD_TIMEOUT, read_head_after(client, Vec::with_capacity(1024))).await.ok().flatten()
}

/// Reads a head that may have begun in `buf`; returns it (without its blank
/// line) and the bytes after it.
async fn read_head_after<S: AsyncRead + Unpin>(client: &mut S, mut buf: Vec<u8>) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut chunk = [0u8; 4096];
    let read = async {
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let rest = buf.split_off(end + 4);
                buf.truncate(end);
                return Some((std::mem::take(&mut buf), rest));
            }
            if buf.len() > MAX_HEAD {
                return None;
            }
            match client.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    read.await
}

async fn handle<S: AsyncRead + AsyncWrite + Unpin + Send>(mut client: S, egress: &Egress, auth: Option<&str>) {
    let Some((raw, rest)) = read_head(&mut client).await else { return };
    let Some(head) = parse_head(&raw) else {
        return respond(&mut client, "400 Bad Request", "", "rebyte egress: malformed request\n").await;
    };
    if let Some(expected) = auth
        && head.header("proxy-authorization") != Some(expected)
    {
        let challenge = "Proxy-Authenticate: Basic realm=\"rebyte\"\r\n";
        return respond(&mut client, "407 Proxy Authentication Required", challenge, "rebyte egress: unauthorized\n")
            .await;
    }
    let connect = head.method.eq_ignore_ascii_case("CONNECT");
    let (host, port, forward) = if connect {
        match split_authority(&head.target, None) {
            Some((h, p)) => match &egress.secrets {
                // A host a limited secret may be sent to: looked inside.
                Some(secrets) if secrets.placeholders.intercepts(&super::policy::normalize_host(&h)) => {
                    let host = super::policy::normalize_host(&h);
                    return super::intercept::serve(client, rest, host, p, egress, secrets).await;
                }
                _ => (h, p, None),
            },
            None => {
                return respond(&mut client, "400 Bad Request", "", "rebyte egress: CONNECT needs host:port\n").await;
            }
        }
    } else {
        let Some(after) = head.target.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| &head.target[7..])
        else {
            let body = "rebyte egress: send CONNECT, or an absolute http:// URL\n";
            return respond(&mut client, "400 Bad Request", "", body).await;
        };
        let (authority, path) = after.find(['/', '?']).map_or((after, "/"), |i| (&after[..i], &after[i..]));
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let Some((h, p)) = split_authority(authority, Some(80)) else {
            return respond(&mut client, "400 Bad Request", "", "rebyte egress: bad URL\n").await;
        };
        let path = if path.starts_with('?') { format!("/{path}") } else { path.to_string() };
        let forwarded = match &egress.secrets {
            Some(secrets) => secrets.swapped(&super::policy::normalize_host(&h), &head),
            None => None,
        };
        let head = forwarded.as_ref().unwrap_or(&head);
        let path = match &egress.secrets {
            Some(secrets) => secrets.placeholders.substitute(&super::policy::normalize_host(&h), &path).into_owned(),
            None => path,
        };
        (h, p, Some(origin_head(head, &path)))
    };
    let mut upstream = match egress.connect(&host, port).await {
        Ok(s) => s,
        Err(EgressError::Denied(why)) => {
            tracing::info!(host = %host, port, reason = %why, "egress denied");
            return respond(&mut client, "403 Forbidden", "", &format!("rebyte egress: {why}\n")).await;
        }
        Err(EgressError::Unreachable(why)) => {
            return respond(&mut client, "502 Bad Gateway", "", &format!("rebyte egress: {why}\n")).await;
        }
    };
    match forward {
        None => {
            if client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.is_err() {
                return;
            }
            if !rest.is_empty() && upstream.write_all(&rest).await.is_err() {
                return;
            }
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
        Some(mut head) => {
            head.extend_from_slice(&rest);
            if upstream.write_all(&head).await.is_ok() {
                exchange(client, upstream).await;
            }
        }
    }
}

/// One forwarded request: the rest of the request body goes up while the
/// response comes down with `Connection: close`, so the client opens a new
/// proxy connection for its next request (which may be for another host).
pub(super) async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(client: S, upstream: super::BoxStream) {
    let (mut client_r, mut client_w) = tokio::io::split(client);
    let (mut up_r, mut up_w) = tokio::io::split(upstream);
    let up = async {
        let _ = tokio::io::copy(&mut client_r, &mut up_w).await;
        let _ = up_w.shutdown().await;
    };
    let down = async {
        let mut carry = Vec::new();
        loop {
            let Some((head, rest)) = read_head_after(&mut up_r, carry).await else { break };
            let interim = head.get(9..10) == Some(b"1");
            if client_w.write_all(&close_response(&head, interim)).await.is_err() {
                break;
            }
            if !interim {
                if client_w.write_all(&rest).await.is_ok() {
                    let _ = tokio::io::copy(&mut up_r, &mut client_w).await;
                }
                break;
            }
            carry = rest;
        }
        let _ = client_w.shutdown().await;
    };
    tokio::join!(up, down);
}

/// A response head with its connection headers replaced by `Connection: close`
/// (an interim `1xx` head is passed on as it is).
fn close_response(head: &[u8], interim: bool) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut out = String::with_capacity(head.len() + 24);
    for (i, line) in text.split("\r\n").enumerate() {
        let name = line.split(':').next().unwrap_or("").trim();
        if i > 0 && !interim && (name.eq_ignore_ascii_case("connection") || name.eq_ignore_ascii_case("keep-alive")) {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    if !interim {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// The request as the origin server sees it: origin-form target, no proxy
/// headers, and `Connection: close`.
pub(super) fn origin_head(head: &Head, path: &str) -> Vec<u8> {
    let mut out = format!("{} {} {}\r\n", head.method, path, head.version);
    const HOP: &[&str] = &["proxy-authorization", "proxy-connection", "connection", "keep-alive"];
    for (name, value) in &head.headers {
        if !HOP.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_parse_with_and_without_ports() {
        assert_eq!(split_authority("example.com:443", None), Some(("example.com".into(), 443)));
        assert_eq!(split_authority("example.com", Some(80)), Some(("example.com".into(), 80)));
        assert_eq!(split_authority("example.com", None), None);
        assert_eq!(split_authority("[::1]:8080", None), Some(("::1".into(), 8080)));
        assert_eq!(split_authority(":80", None), None);
    }

    #[test]
    fn responses_are_closed_and_interim_ones_pass_unchanged() {
        let head = b"HTTP/1.1 200 OK\r\nconnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 2";
        assert_eq!(close_response(head, false), b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n");
        assert_eq!(close_response(b"HTTP/1.1 100 Continue", true), b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[test]
    fn absolute_requests_become_origin_form_without_proxy_headers() {
        let raw = b"GET http://example.com/a?b HTTP/1.1\r\nHost: example.com\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic x";
        let head = parse_head(raw).unwrap();
        let out = String::from_utf8(origin_head(&head, "/a?b")).unwrap();
        assert_eq!(out, "GET /a?b HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
    }
}
