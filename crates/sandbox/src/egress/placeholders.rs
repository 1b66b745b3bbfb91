//! Secrets a sandbox can use but never read. A `limited` environment
//! credential reaches the sandbox as a random placeholder; the egress proxy
//! swaps the real value in, in the request line and the header values of
//! requests to that credential's allowed hosts only, and nowhere else. A
//! placeholder stays the same for a credential name for the sandbox's life
//! (a stdio server started with it keeps working when the value is rotated).

use rand::Rng;
use std::borrow::Cow;
use std::sync::RwLock;

/// The placeholders' common prefix: easy to spot in a request, never a real
/// secret's.
const PREFIX: &str = "rebyte_placeholder_";

struct Entry {
    name: String,
    placeholder: String,
    value: String,
    hosts: Vec<String>,
}

/// The limited secrets of one sandbox, by credential name.
#[derive(Default)]
pub struct Placeholders {
    entries: RwLock<Vec<Entry>>,
}

impl std::fmt::Debug for Placeholders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let names: Vec<(&str, &[String])> = entries.iter().map(|e| (e.name.as_str(), e.hosts.as_slice())).collect();
        f.debug_struct("Placeholders").field("entries", &names).finish()
    }
}

fn fresh() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    let mut out = String::with_capacity(PREFIX.len() + 32);
    out.push_str(PREFIX);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

impl Placeholders {
    /// The placeholder standing for `name`, whose real value is `value`,
    /// usable toward `hosts` (lowercase names or IPv4 addresses). The first
    /// call for a name mints it; later calls keep it and take the new value
    /// and hosts.
    pub fn bind(&self, name: &str, value: &str, hosts: &[String]) -> String {
        let hosts: Vec<String> = hosts.iter().map(|h| h.to_ascii_lowercase()).collect();
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = entries.iter_mut().find(|e| e.name == name) {
            entry.value = value.to_string();
            entry.hosts = hosts;
            return entry.placeholder.clone();
        }
        let placeholder = fresh();
        entries.push(Entry {
            name: name.to_string(),
            placeholder: placeholder.clone(),
            value: value.to_string(),
            hosts,
        });
        placeholder
    }

    /// Whether requests to `host` may carry a real value (the proxy then
    /// looks inside its TLS).
    pub fn intercepts(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.entries.read().unwrap_or_else(|e| e.into_inner()).iter().any(|e| e.hosts.contains(&host))
    }

    /// `text` with the placeholders of the secrets allowed toward `host`
    /// replaced by their values; every other placeholder stays as it is.
    pub fn substitute<'a>(&self, host: &str, text: &'a str) -> Cow<'a, str> {
        if !text.contains(PREFIX) {
            return Cow::Borrowed(text);
        }
        let host = host.to_ascii_lowercase();
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let mut out = Cow::Borrowed(text);
        for entry in entries.iter().filter(|e| e.hosts.contains(&host)) {
            if out.contains(&entry.placeholder) {
                out = Cow::Owned(out.replace(&entry.placeholder, &entry.value));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placeholder_is_swapped_only_toward_its_hosts_and_outlives_a_new_value() {
        let table = Placeholders::default();
        let token = table.bind("API_TOKEN", "s3cret", &["API.example.com".into()]);
        let other = table.bind("OTHER", "x", &["other.test".into()]);
        assert!(token.starts_with(PREFIX) && token.len() == PREFIX.len() + 32 && token != other);
        let header = format!("Bearer {token}");
        assert_eq!(table.substitute("api.example.com", &header), "Bearer s3cret");
        assert_eq!(table.substitute("evil.test", &header), header);
        assert_eq!(table.substitute("other.test", &header), header, "another credential's host");
        assert!(table.intercepts("api.example.com") && !table.intercepts("evil.test"));
        // Rotated: the same placeholder, the new value.
        assert_eq!(table.bind("API_TOKEN", "n3w", &["api.example.com".into()]), token);
        assert_eq!(table.substitute("api.example.com", &format!("/q?key={token}&k2={token}")), "/q?key=n3w&k2=n3w");
        assert!(!format!("{table:?}").contains("n3w"), "values never in Debug");
    }
}
