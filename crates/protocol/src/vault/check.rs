//! Pure checks of vault and credential requests. Every failure names the field
//! (`auth.refresh.token_endpoint` …); no message ever contains a secret value.

use super::{CredentialAuth, CredentialAuthCreate, McpOauthAuth, Networking, OauthRefresh, SECRET_MAX_BYTES};
use crate::validate::{Result, invalid};
use secrets::Secret;

/// Variables the sandbox or its proxy own; credentials may not take them.
const RESERVED_NAMES: [&str; 9] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
];
const RESERVED_PREFIXES: [&str; 2] = ["CODEX_", "REBYTE_"];

/// Checks a write-only value: 1 to 16 KiB, no carriage return, newline or NUL
/// (it ends up in an HTTP header or a process environment).
pub fn check_secret(param: &str, secret: &Secret) -> Result {
    if secret.is_empty() {
        return Err(invalid(param, "must not be empty"));
    }
    if secret.len() > SECRET_MAX_BYTES {
        return Err(invalid(param, format!("must be at most {SECRET_MAX_BYTES} bytes, got {}", secret.len())));
    }
    if secret.expose().bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        return Err(invalid(param, "must not contain carriage returns, newlines or NUL bytes"));
    }
    Ok(())
}

/// Checks an environment variable name: ASCII letters, digits and `_`, not
/// starting with a digit, not reserved.
pub fn check_secret_name(param: &str, name: &str) -> Result {
    let mut bytes = name.bytes();
    let well_formed = name.len() <= 128
        && bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !well_formed {
        return Err(invalid(
            param,
            format!(
                "'{name}' must be 1 to 128 ASCII letters, digits or underscores, starting with a letter or underscore"
            ),
        ));
    }
    let upper = name.to_ascii_uppercase();
    if RESERVED_NAMES.contains(&upper.as_str()) || RESERVED_PREFIXES.iter().any(|p| upper.starts_with(p)) {
        return Err(invalid(param, format!("'{name}' is reserved")));
    }
    Ok(())
}

/// The host of an `http(s)://host[:port]/…` URL, lowercased.
fn host_of(rest: &str) -> &str {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or("");
    }
    authority.split(':').next().unwrap_or("")
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// Checks a URL: `https://`, or `http://` when `allow_http` or the host is a
/// loopback address (a server on this machine); at most 2048 characters, no
/// spaces, no user info.
pub fn check_url(param: &str, url: &str, allow_http: bool) -> Result {
    if url.len() > 2048 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid(param, "must be a URL of at most 2048 characters without spaces"));
    }
    let lower = url.to_ascii_lowercase();
    let (secure, rest) = match (lower.strip_prefix("https://"), lower.strip_prefix("http://")) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) => (false, rest),
        _ => return Err(invalid(param, "must be an https:// URL")),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host_of(rest);
    if host.is_empty() || authority.contains('@') {
        return Err(invalid(param, "must name a host (and no user info)"));
    }
    if !secure && !allow_http && !is_loopback(host) {
        return Err(invalid(param, "must be an https:// URL (http:// is accepted for loopback hosts only)"));
    }
    Ok(())
}

fn is_host(h: &str) -> bool {
    let labels_ok = h.split('.').all(|l| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    !h.is_empty() && h.len() <= 253 && labels_ok
}

/// Checks and normalizes networking: 1 to 16 distinct lowercase hosts or IPv4
/// addresses, without scheme, path, port or wildcard.
pub fn normalize_networking(param: &str, n: &Networking) -> Result<Networking> {
    let Networking::Limited { allowed_hosts } = n else { return Ok(Networking::Unrestricted) };
    if allowed_hosts.is_empty() || allowed_hosts.len() > 16 {
        return Err(invalid(
            format!("{param}.allowed_hosts"),
            format!("must list 1 to 16 hosts, got {}", allowed_hosts.len()),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(allowed_hosts.len());
    for (i, host) in allowed_hosts.iter().enumerate() {
        let at = format!("{param}.allowed_hosts[{i}]");
        let host = host.trim().to_ascii_lowercase();
        if !is_host(&host) {
            return Err(invalid(
                at,
                format!("'{host}' must be a hostname or IPv4 address, without scheme, path, port or wildcard"),
            ));
        }
        if out.contains(&host) {
            return Err(invalid(at, format!("'{host}' is listed twice")));
        }
        out.push(host);
    }
    Ok(Networking::Limited { allowed_hosts: out })
}

fn check_text(param: &str, value: &str, max: usize) -> Result {
    if value.is_empty() || value.len() > max {
        return Err(invalid(param, format!("must be 1 to {max} bytes, got {}", value.len())));
    }
    Ok(())
}

impl CredentialAuthCreate {
    /// Checks everything but `expires_at` (whose parsing needs a clock library)
    /// and returns the public view of this credential's configuration, with
    /// `expires_at` as given.
    pub fn check(&self, param: &str) -> Result<CredentialAuth> {
        let p = |field: &str| format!("{param}.{field}");
        match self {
            CredentialAuthCreate::StaticBearer { token, mcp_server_url } => {
                check_secret(&p("token"), token)?;
                check_url(&p("mcp_server_url"), mcp_server_url, true)?;
                Ok(CredentialAuth::StaticBearer { mcp_server_url: mcp_server_url.clone() })
            }
            CredentialAuthCreate::EnvironmentVariable { networking, secret_name, secret_value } => {
                check_secret_name(&p("secret_name"), secret_name)?;
                check_secret(&p("secret_value"), secret_value)?;
                let networking = normalize_networking(&p("networking"), networking)?;
                Ok(CredentialAuth::EnvironmentVariable { networking, secret_name: secret_name.clone() })
            }
            CredentialAuthCreate::McpOauth { access_token, mcp_server_url, expires_at, refresh } => {
                check_secret(&p("access_token"), access_token)?;
                check_url(&p("mcp_server_url"), mcp_server_url, true)?;
                let refresh = match refresh {
                    None => None,
                    Some(r) => {
                        check_text(&p("refresh.client_id"), &r.client_id, 1024)?;
                        check_secret(&p("refresh.refresh_token"), &r.refresh_token)?;
                        check_url(&p("refresh.token_endpoint"), &r.token_endpoint, false)?;
                        if let Some(secret) = r.token_endpoint_auth.client_secret() {
                            check_secret(&p("refresh.token_endpoint_auth.client_secret"), secret)?;
                        }
                        if let Some(resource) = &r.resource {
                            check_url(&p("refresh.resource"), resource, true)?;
                        }
                        if let Some(scope) = &r.scope {
                            check_text(&p("refresh.scope"), scope, 1024)?;
                        }
                        Some(OauthRefresh {
                            client_id: r.client_id.clone(),
                            resource: r.resource.clone(),
                            scope: r.scope.clone(),
                            token_endpoint: r.token_endpoint.clone(),
                            token_endpoint_auth: r.token_endpoint_auth.public(),
                        })
                    }
                };
                Ok(CredentialAuth::McpOauth(McpOauthAuth {
                    expires_at: expires_at.clone(),
                    mcp_server_url: mcp_server_url.clone(),
                    refresh,
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_https_except_on_loopback() {
        assert!(check_url("u", "https://mcp.example.com/mcp", false).is_ok());
        assert!(check_url("u", "http://127.0.0.1:8080/token", false).is_ok());
        assert!(check_url("u", "http://[::1]:80/t", false).is_ok());
        assert!(check_url("u", "http://example.com/token", false).is_err());
        assert!(check_url("u", "http://example.com/mcp", true).is_ok());
        assert!(check_url("u", "https://user:pw@example.com/", true).is_err());
        assert!(check_url("u", "ftp://example.com/", true).is_err());
    }

    #[test]
    fn secret_errors_never_contain_the_value() {
        let err = check_secret("auth.token", &Secret::new("PLANTED\nvalue")).unwrap_err();
        assert_eq!(err.param, "auth.token");
        assert!(!err.message.contains("PLANTED"));
    }

    #[test]
    fn secret_names_and_hosts_are_checked() {
        assert!(check_secret_name("n", "SERVICE_API_KEY").is_ok());
        assert!(check_secret_name("n", "_x1").is_ok());
        assert!(check_secret_name("n", "1X").is_err());
        assert!(check_secret_name("n", "CODEX_TOKEN").is_err());
        assert!(check_secret_name("n", "https_proxy").is_err());
        let n = Networking::Limited { allowed_hosts: vec!["API.Example.com".into(), "10.0.0.1".into()] };
        assert_eq!(
            normalize_networking("n", &n).unwrap(),
            Networking::Limited { allowed_hosts: vec!["api.example.com".into(), "10.0.0.1".into()] }
        );
        for bad in ["https://x.com", "x.com:443", "*.x.com", "x.com/p", "::1"] {
            let n = Networking::Limited { allowed_hosts: vec![bad.into()] };
            assert_eq!(normalize_networking("n", &n).unwrap_err().param, "n.allowed_hosts[0]", "{bad}");
        }
    }
}
