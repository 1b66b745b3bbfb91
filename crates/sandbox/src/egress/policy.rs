//! Which destinations a restricted sandbox may reach: an allowlist or a
//! blocklist of domains (each entry covers the domain and its subdomains;
//! no wildcards), checked on the host name a client asked for, and a rule
//! that loopback, link-local and unspecified addresses are reached only
//! through an entry naming that exact host.

use std::net::IpAddr;

/// The domain lists of `network.access: restricted`. With `allowed`
/// non-empty only those domains are reachable; otherwise everything but
/// `blocked` is. Both empty: nothing is reachable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainPolicy {
    pub allowed: Vec<String>,
    pub blocked: Vec<String>,
}

/// Longest host name (RFC 1035).
const MAX_NAME: usize = 253;

/// Lower-cases a host name, drops a trailing dot and IPv6 brackets.
pub fn normalize_host(host: &str) -> String {
    let host = host.trim().trim_start_matches('[').trim_end_matches(']');
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Checks one entry of `allowed_domains` / `blocked_domains` and returns it
/// normalized: a host name or an IP address, without scheme, port, path or
/// wildcard.
pub fn parse_domain(entry: &str) -> Result<String, String> {
    let d = normalize_host(entry);
    if d.is_empty() {
        return Err("a domain must not be empty".into());
    }
    if d.contains('*') {
        return Err(format!("{entry:?}: wildcard domains are not supported (an entry covers its subdomains)"));
    }
    if d.parse::<IpAddr>().is_ok() {
        return Ok(d);
    }
    if d.len() > MAX_NAME {
        return Err(format!("{entry:?}: longer than {MAX_NAME} characters"));
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if !d.split('.').all(label_ok) {
        return Err(format!("{entry:?}: not a domain name (no scheme, port or path)"));
    }
    Ok(d)
}

impl DomainPolicy {
    /// Normalizes and checks both lists; they may not both be non-empty.
    pub fn new(allowed: &[String], blocked: &[String]) -> Result<Self, String> {
        if !allowed.is_empty() && !blocked.is_empty() {
            return Err("allowed_domains and blocked_domains cannot both be set".into());
        }
        let parse = |v: &[String]| v.iter().map(|d| parse_domain(d)).collect::<Result<Vec<_>, _>>();
        Ok(DomainPolicy { allowed: parse(allowed)?, blocked: parse(blocked)? })
    }

    /// Whether `host` (normalized) may be asked for; the reason if not.
    pub fn check(&self, host: &str) -> Result<(), String> {
        if let Some(entry) = self.blocked.iter().find(|e| covers(e, host)) {
            return Err(format!("{host} is blocked by the environment's network policy ({entry})"));
        }
        if self.allowed.is_empty() {
            if self.blocked.is_empty() {
                return Err(format!("{host} is not reachable: the environment's network is restricted to no domain"));
            }
            return Ok(());
        }
        if self.allowed.iter().any(|e| covers(e, host)) {
            Ok(())
        } else {
            Err(format!("{host} is not in the environment's allowed_domains"))
        }
    }

    /// Whether the allowlist names exactly this host (needed to reach a
    /// loopback or link-local address).
    pub fn names_exactly(&self, host: &str) -> bool {
        self.allowed.iter().any(|e| e == host)
    }
}

/// An entry covers itself and its subdomains; an IP address only itself.
fn covers(entry: &str, host: &str) -> bool {
    if host == entry {
        return true;
    }
    host.parse::<IpAddr>().is_err()
        && host.len() > entry.len()
        && host.ends_with(entry)
        && host.as_bytes()[host.len() - entry.len() - 1] == b'.'
}

/// Addresses a restricted sandbox reaches only by an exact allowlist entry:
/// the host itself (loopback), cloud metadata (link-local), "any".
pub fn is_sensitive(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local() || v4.is_unspecified() || v4.is_broadcast(),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_sensitive(IpAddr::V4(v4));
            }
            v6.is_loopback() || v6.is_unspecified() || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allowed: &[&str], blocked: &[&str]) -> DomainPolicy {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        DomainPolicy::new(&v(allowed), &v(blocked)).unwrap()
    }

    #[test]
    fn an_allowlist_covers_subdomains_and_nothing_else() {
        let p = policy(&["PyPI.org.", "files.pythonhosted.org"], &[]);
        assert!(p.check("pypi.org").is_ok());
        assert!(p.check("upload.pypi.org").is_ok());
        assert!(p.check("evilpypi.org").is_err());
        assert!(p.check("pythonhosted.org").is_err());
        assert!(p.check("example.com").is_err());
    }

    #[test]
    fn a_blocklist_allows_everything_else_and_empty_lists_allow_nothing() {
        let p = policy(&[], &["example.com"]);
        assert!(p.check("www.example.com").unwrap_err().contains("blocked"));
        assert!(p.check("example.org").is_ok());
        assert!(policy(&[], &[]).check("example.org").is_err());
    }

    #[test]
    fn ip_entries_match_only_themselves() {
        let p = policy(&["3.4"], &[]);
        assert!(p.check("1.2.3.4").is_err());
        let p = policy(&["127.0.0.1"], &[]);
        assert!(p.check("127.0.0.1").is_ok() && p.names_exactly("127.0.0.1"));
    }

    #[test]
    fn bad_entries_are_refused_with_a_reason() {
        for bad in ["*.example.com", "", "https://example.com", "example.com:443", "exa mple.com", "a/b"] {
            assert!(parse_domain(bad).is_err(), "{bad}");
        }
        let both = DomainPolicy::new(&["a.com".into()], &["b.com".into()]);
        assert!(both.unwrap_err().contains("both"));
    }

    #[test]
    fn sensitive_addresses() {
        for ip in ["127.0.0.1", "169.254.169.254", "0.0.0.0", "::1", "fe80::1", "::ffff:127.0.0.1"] {
            assert!(is_sensitive(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["10.0.0.1", "151.101.0.223", "2a04:4e42::223"] {
            assert!(!is_sensitive(ip.parse().unwrap()), "{ip}");
        }
    }
}
