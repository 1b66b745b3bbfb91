//! Limited secrets at the egress proxy: a request through it to an allowed
//! host over HTTPS reaches that host with the real value in its request line
//! and headers (the sandbox's TLS answered by the environment's CA, the
//! host's verified against its own roots); to any other host it carries the
//! placeholder untouched, through a plain tunnel.

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use sandbox::NetworkPolicy;
use sandbox::egress::intercept::{CA_FILE, Interception};
use sandbox::egress::{DomainPolicy, Egress, proxy};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A test CA and an HTTPS server on 127.0.0.1 with its certificate, which
/// answers each request with the request head it received.
async fn upstream() -> (u16, RootCertStore) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.subject_alt_names = vec![SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let leaf = leaf.signed_by(&key, &ca, &ca_key).unwrap();
    let config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(leaf.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else { return };
                let head = read_head(&mut tls).await;
                let reply =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}", head.len());
                let _ = tls.write_all(reply.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(ca.der().to_vec())).unwrap();
    (port, roots)
}

async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap_or(0) == 0 {
            break;
        }
        buf.push(byte[0]);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

async fn read_all<S: AsyncRead + Unpin>(mut stream: S) -> String {
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// The proxy on a host port (Basic `u:p`) in front of `egress`.
async fn proxy_port(egress: Egress) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { proxy::serve_tcp(listener, Arc::new(egress), "u", "p").await });
    port
}

/// `CONNECT 127.0.0.1:<port>` through the proxy, then TLS trusting `roots`,
/// then one GET; returns the response.
async fn get_through(proxy: u16, port: u16, roots: RootCertStore, target: &str, auth: &str) -> String {
    let mut tunnel = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
    let connect = format!(
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
    );
    tunnel.write_all(connect.as_bytes()).await.unwrap();
    let answer = read_head(&mut tunnel).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1".to_string()).unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tunnel).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {auth}\r\n\r\n");
    tls.write_all(request.as_bytes()).await.unwrap();
    read_all(tls).await
}

fn interception(dir: &std::path::Path, upstream_roots: RootCertStore) -> Arc<Interception> {
    Arc::new(
        Interception::new("test-limited", dir, "/run/rebyte", "http://127.0.0.1:3128")
            .with_roots(Arc::new(upstream_roots)),
    )
}

fn egress(secrets: Arc<Interception>) -> Egress {
    Egress {
        network: NetworkPolicy::Enabled,
        domains: DomainPolicy::default(),
        dial_socket: None,
        resume: None,
        secrets: Some(secrets),
    }
}

fn trusting_pem(pem: &str) -> RootCertStore {
    let der = pem.lines().filter(|l| !l.starts_with("-----")).collect::<String>();
    let der = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, der).unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(der)).unwrap();
    roots
}

#[tokio::test]
async fn an_allowed_host_gets_the_real_value_in_its_request_line_and_headers() {
    let (port, upstream_roots) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let secrets = interception(dir.path(), upstream_roots);
    let bound = secrets.bind("API_TOKEN", "s3cret-value", &["127.0.0.1".into()]).unwrap();
    assert!(!bound.placeholder.contains("s3cret"));
    assert!(bound.env.contains(&("HTTPS_PROXY".into(), "http://127.0.0.1:3128".into())), "{:?}", bound.env);
    assert!(bound.env.iter().any(|(k, v)| k == "SSL_CERT_FILE" && v == "/run/rebyte/ca-bundle.pem"));
    // The sandbox trusts the environment's CA, written to the run directory.
    let ca = std::fs::read_to_string(dir.path().join(CA_FILE)).unwrap();
    let bundle = std::fs::read_to_string(dir.path().join("ca-bundle.pem")).unwrap();
    assert!(bundle.ends_with(&ca), "the bundle ends with the environment's CA");
    let proxy = proxy_port(egress(secrets)).await;
    let p = &bound.placeholder;
    let reply =
        get_through(proxy, port, trusting_pem(&ca), &format!("/v1/x?key={p}&q=1"), &format!("Bearer {p}")).await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("GET /v1/x?key=s3cret-value&q=1 HTTP/1.1"), "{reply}");
    assert!(reply.contains("Authorization: Bearer s3cret-value"), "{reply}");
    assert!(!reply.contains(p.as_str()), "{reply}");
}

#[tokio::test]
async fn another_host_sees_only_the_placeholder_through_a_plain_tunnel() {
    let (port, upstream_roots) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let secrets = interception(dir.path(), upstream_roots.clone());
    let bound = secrets.bind("API_TOKEN", "s3cret-value", &["api.example.com".into()]).unwrap();
    let proxy = proxy_port(egress(secrets)).await;
    let p = &bound.placeholder;
    // Not intercepted: the client talks TLS to the real server itself.
    let reply = get_through(proxy, port, upstream_roots, &format!("/?key={p}"), &format!("Bearer {p}")).await;
    assert!(reply.contains(&format!("GET /?key={p} HTTP/1.1")), "{reply}");
    assert!(reply.contains(&format!("Authorization: Bearer {p}")), "{reply}");
    assert!(!reply.contains("s3cret"), "{reply}");
}

/// A plain-HTTP request to an allowed host through the proxy gets the value
/// too; one to another host does not.
#[tokio::test]
async fn absolute_http_requests_are_swapped_only_toward_allowed_hosts() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let head = read_head(&mut stream).await;
                let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{head}", head.len());
                let _ = stream.write_all(reply.as_bytes()).await;
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let secrets = interception(dir.path(), RootCertStore::empty());
    let p = secrets.bind("K", "v4lue", &["127.0.0.1".into()]).unwrap().placeholder;
    let proxy = proxy_port(egress(secrets)).await;
    for (host, swapped) in [("127.0.0.1", true), ("localhost", false)] {
        let mut stream = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
        let request = format!(
            "GET http://{host}:{port}/a?k={p} HTTP/1.1\r\nHost: {host}:{port}\r\nX-Key: {p}\r\nProxy-Authorization: Basic dTpw\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let reply = read_all(stream).await;
        assert!(reply.starts_with("HTTP/1.1 200"), "{host}: {reply}");
        assert_eq!(
            reply.contains("GET /a?k=v4lue HTTP/1.1") && reply.contains("X-Key: v4lue"),
            swapped,
            "{host}: {reply}"
        );
        assert_eq!(reply.contains(p.as_str()), !swapped, "{host}: {reply}");
    }
}
