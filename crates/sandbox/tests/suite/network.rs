//! Restricted networks (the filtering proxy) and connections into a
//! sandbox's own loopback.

use super::support::{run, sh, start, start_with};
use sandbox::egress::DomainPolicy;
use sandbox::{NetworkPolicy, Sandbox};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// This machine's address on its default route (not loopback), so that a
/// restricted sandbox's proxy may be allowed to reach a server of the test.
fn host_ip() -> String {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    probe.connect("192.0.2.1:9").expect("a default route");
    probe.local_addr().unwrap().ip().to_string()
}

/// An HTTP server on all interfaces answering every request with `body`.
async fn http_server(body: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let reply =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

fn restricted(allowed: &[&str], blocked: &[&str]) -> impl FnOnce(&mut sandbox::SandboxSpec) {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let domains = DomainPolicy::new(&v(allowed), &v(blocked)).unwrap();
    move |s| {
        s.network = NetworkPolicy::Restricted;
        s.domains = domains;
    }
}

/// `urllib` honours `http_proxy`: prints the status and body, or the error.
fn fetch(url: &str) -> String {
    format!(
        "python3 -c \"import urllib.request as u, urllib.error as e\ntry: r = u.urlopen('{url}', timeout=10); print(r.status, r.read().decode())\nexcept e.HTTPError as x: print(x.code, x.read().decode())\""
    )
}

/// A `CONNECT` tunnel through the sandbox's proxy, then a plain request.
fn tunnel(host: &str, port: u16) -> String {
    format!(
        "python3 -c \"import socket\ns = socket.create_connection(('127.0.0.1', 3128), timeout=10)\ns.sendall(b'CONNECT {host}:{port} HTTP/1.1\\r\\n\\r\\n')\nhead = s.recv(4096).decode()\nprint(head.split(chr(13))[0])\nif ' 200 ' in head:\n    s.sendall(b'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); print(s.recv(4096).decode().split(chr(10))[-1])\""
    )
}

#[tokio::test]
async fn a_restricted_network_reaches_allowed_domains_through_the_proxy_and_nothing_else() {
    let (ip, port) = (host_ip(), http_server("hello from the host").await);
    let sb = start_with("net-allow", restricted(&[&ip], &[])).await;
    let sandbox = &*sb.sandbox;
    assert_eq!(sh(sandbox, "echo $HTTP_PROXY $https_proxy").await, "http://127.0.0.1:3128 http://127.0.0.1:3128");

    // Allowed: plain HTTP through the proxy, and a CONNECT tunnel.
    assert_eq!(sh(sandbox, &fetch(&format!("http://{ip}:{port}/x"))).await, "200 hello from the host");
    let out = sh(sandbox, &tunnel(&ip, port)).await;
    assert_eq!(out, "HTTP/1.1 200 Connection established\nhello from the host", "{out}");

    // Not allowed: refused by the proxy with the policy's reason.
    let out = sh(sandbox, &fetch("http://example.com/")).await;
    assert!(out.starts_with("403 ") && out.contains("allowed_domains"), "{out}");
    assert!(sh(sandbox, &tunnel("example.com", 443)).await.starts_with("HTTP/1.1 403"));

    // No way around the proxy: the sandbox has no route out.
    let direct = format!("python3 -c \"import socket; socket.create_connection(('{ip}', {port}), timeout=3)\"");
    let out = run(sandbox, &direct).await;
    assert!(!out.status.success(), "a direct connection got out");

    // The host's loopback is not the sandbox's: 127.0.0.1 stays inside.
    let out = sh(sandbox, &tunnel("127.0.0.1", port)).await;
    assert!(out.starts_with("HTTP/1.1 502"), "{out}");
}

#[tokio::test]
async fn a_blocklist_refuses_its_domains_and_allows_the_rest() {
    let (ip, port) = (host_ip(), http_server("still reachable").await);
    let sb = start_with("net-block", restricted(&[], &["example.com"])).await;
    let out = sh(&*sb.sandbox, &fetch("http://www.example.com/")).await;
    assert!(out.starts_with("403 ") && out.contains("blocked"), "{out}");
    assert_eq!(sh(&*sb.sandbox, &fetch(&format!("http://{ip}:{port}/"))).await, "200 still reachable");
}

async fn get(stream: &mut sandbox::egress::BoxStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await.unwrap().unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

/// Starts an HTTP server on the sandbox's loopback and waits for it.
async fn serve_inside(sandbox: &dyn Sandbox, port: u16) {
    sh(sandbox, "mkdir -p site && echo inside > site/index.html").await;
    let start = format!("cd site && nohup python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &");
    sh(sandbox, &start).await;
    let wait = format!(
        "for i in $(seq 100); do python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\" 2>/dev/null && exit 0; sleep 0.05; done; exit 1"
    );
    sh(sandbox, &wait).await;
}

#[tokio::test]
async fn the_host_reaches_a_server_on_a_closed_sandboxs_loopback_and_nothing_beyond() {
    let sb = start("net-dial").await;
    let sandbox = &*sb.sandbox;
    serve_inside(sandbox, 8123).await;

    let mut stream = sandbox.connect("localhost", 8123).await.unwrap();
    let page = get(&mut stream, "GET /index.html HTTP/1.0\r\n\r\n").await;
    assert!(page.starts_with("HTTP/1.0 200") && page.ends_with("inside\n"), "{page}");
    let refused = sandbox.connect("127.0.0.1", 8124).await.err().unwrap().to_string();
    assert!(refused.contains("refused"), "{refused}");
    let denied = sandbox.connect("example.com", 80).await.err().unwrap().to_string();
    assert!(denied.contains("disabled"), "{denied}");

    // The same through the host proxy the server's own clients use.
    let proxy = sandbox.http_proxy().await.unwrap().expect("a closed sandbox has a host proxy");
    let addr = proxy.url.trim_start_matches("http://").to_string();
    let auth = base64_basic(&proxy.username, &proxy.password);
    let mut s: sandbox::egress::BoxStream = Box::new(tokio::net::TcpStream::connect(&addr).await.unwrap());
    let req = format!(
        "GET http://localhost:8123/index.html HTTP/1.1\r\nHost: localhost\r\nProxy-Authorization: {auth}\r\n\r\n"
    );
    let page = get(&mut s, &req).await;
    assert!(page.starts_with("HTTP/1.0 200") && page.ends_with("inside\n"), "{page}");
    let mut s: sandbox::egress::BoxStream = Box::new(tokio::net::TcpStream::connect(&addr).await.unwrap());
    let page = get(&mut s, "GET http://localhost:8123/ HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
    assert!(page.starts_with("HTTP/1.1 407"), "{page}");
}

fn base64_basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

#[tokio::test]
async fn a_paused_sandbox_resumes_for_a_connection_into_it() {
    let sb = start("net-pause").await;
    serve_inside(&*sb.sandbox, 8125).await;
    sb.sandbox.pause().await.unwrap();
    let mut stream = sb.sandbox.connect("localhost", 8125).await.unwrap();
    assert!(get(&mut stream, "GET /index.html HTTP/1.0\r\n\r\n").await.ends_with("inside\n"));
}
