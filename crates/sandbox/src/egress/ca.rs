//! The certificate authority of one environment: the egress proxy presents
//! a certificate it signs for each host whose requests may carry a limited
//! secret, so it can swap the secret in inside TLS. Its key never leaves the
//! server's memory (a restarted server makes a new one); the sandbox trusts
//! its certificate through a bundle in the run directory. Toward the real
//! host the proxy verifies the host's certificate against the host's roots.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A CA minted for one sandbox, and the leaf configurations made with it.
pub struct EnvironmentCa {
    cert: rcgen::Certificate,
    key: KeyPair,
    leaves: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl std::fmt::Debug for EnvironmentCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvironmentCa").finish_non_exhaustive()
    }
}

impl EnvironmentCa {
    /// A new CA named after the sandbox.
    pub fn new(sandbox: &str) -> Result<Self, String> {
        let key = KeyPair::generate().map_err(|e| format!("generate the environment's CA key: {e}"))?;
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| format!("the environment's CA: {e}"))?;
        params.distinguished_name.push(DnType::CommonName, format!("rebyte egress CA for {sandbox}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).map_err(|e| format!("sign the environment's CA: {e}"))?;
        Ok(Self { cert, key, leaves: Mutex::default() })
    }

    /// The CA's certificate, PEM, for the sandbox to trust.
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// The TLS server side the proxy shows a sandbox process connecting to
    /// `host` (made once per host).
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, String> {
        let mut leaves = self.leaves.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(config) = leaves.get(host) {
            return Ok(config.clone());
        }
        let config = Arc::new(self.leaf(host)?);
        leaves.insert(host.to_string(), config.clone());
        Ok(config)
    }

    fn leaf(&self, host: &str) -> Result<ServerConfig, String> {
        let fail = |e: &dyn std::fmt::Display| format!("a certificate for {host}: {e}");
        let key = KeyPair::generate().map_err(|e| fail(&e))?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| fail(&e))?;
        params.distinguished_name.push(DnType::CommonName, host);
        params.subject_alt_names = vec![match host.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(host.try_into().map_err(|e| fail(&e))?),
        }];
        let cert = params.signed_by(&key, &self.cert, &self.key).map_err(|e| fail(&e))?;
        let chain = vec![CertificateDer::from(cert.der().to_vec()), CertificateDer::from(self.cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| fail(&e))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| fail(&e))?;
        // One request per connection, over HTTP/1.1 (the proxy rewrites its head).
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

/// The roots the proxy verifies real hosts against: the host's own store
/// (`SSL_CERT_FILE` / `SSL_CERT_DIR` are honoured), loaded once.
pub fn host_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            for error in &found.errors {
                tracing::warn!("loading the host's TLS roots: {error}");
            }
            let mut roots = RootCertStore::empty();
            let (added, ignored) = roots.add_parsable_certificates(found.certs);
            tracing::debug!(added, ignored, "the egress proxy's TLS roots");
            Arc::new(roots)
        })
        .clone()
}

/// The TLS client side toward real hosts.
pub fn client_config(roots: Arc<RootCertStore>) -> Result<Arc<ClientConfig>, String> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("the egress proxy's TLS client: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `host` as a TLS server name (a DNS name or an IP address).
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string()).map_err(|e| format!("'{host}' is not a TLS server name: {e}"))
}
