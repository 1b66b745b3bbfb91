//! How one provider instance is set up: where it is, its key, and the
//! timeouts and retry policy that keep a stalled upstream from hanging a turn.

use std::fmt;
use std::time::Duration;

/// An upstream API key. `Debug` and `Display` print `[redacted]`, so a key
/// never lands in a log line or an error message by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one place that puts it in a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Every wait of a model call is bounded by one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP (and TLS) connection establishment, per attempt.
    pub connect: Duration,
    /// From sending the request to the response headers, per attempt.
    pub response: Duration,
    /// Between two chunks of the streamed body (including the first one).
    pub idle: Duration,
}

impl Default for Timeouts {
    /// Generous enough for a reasoning model that thinks before its first
    /// token, short enough that a dead upstream fails the turn in minutes.
    fn default() -> Self {
        Self { connect: Duration::from_secs(10), response: Duration::from_secs(120), idle: Duration::from_secs(120) }
    }
}

/// Retries of retryable failures (connect errors, 429, 500/502/503/504, 529),
/// only ever before the stream has yielded anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    /// The delay before the first retry; it doubles on each further one.
    pub initial_backoff: Duration,
    /// Upper bound of one delay, also for a `Retry-After` the upstream asks for.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_retries: 3, initial_backoff: Duration::from_millis(500), max_backoff: Duration::from_secs(8) }
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry` (0-based): exponential, with
    /// "equal jitter" (half fixed, half random) so that many turns hitting
    /// the same rate limit do not retry in lockstep. A `Retry-After` from the
    /// upstream wins when it is longer, within `max_backoff`.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self.initial_backoff.saturating_mul(2u32.saturating_pow(retry.min(16))).min(self.max_backoff);
        let half = exp / 2;
        let jitter = half.mul_f64(rand::random::<f64>());
        let delay = half + jitter;
        match retry_after {
            Some(asked) if asked > delay => asked.min(self.max_backoff),
            _ => delay,
        }
    }
}

/// Timeouts and retries of one provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProviderSettings {
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
}

/// Everything needed to build one provider instance.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The name errors and logs use: `openai`, `anthropic`, or the
    /// `[providers.<name>]` key of rebyte.toml.
    pub name: String,
    /// The API root: `https://api.openai.com/v1` style for OpenAI (requests go
    /// to `{base_url}/chat/completions`), `https://api.anthropic.com` style for
    /// Anthropic (requests go to `{base_url}/v1/messages`).
    pub base_url: String,
    /// Sent as `Authorization: Bearer` (OpenAI) or `x-api-key` (Anthropic);
    /// no auth header at all when `None` (local servers).
    pub api_key: Option<ApiKey>,
    pub settings: ProviderSettings,
}

impl ProviderConfig {
    pub fn new(name: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self { name: name.into(), base_url: base_url.into(), api_key: None, settings: ProviderSettings::default() }
    }

    pub fn api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    pub fn settings(mut self, settings: ProviderSettings) -> Self {
        self.settings = settings;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_never_prints_itself() {
        let key = ApiKey::new("sk-secret");
        assert_eq!(format!("{key:?} {key}"), "ApiKey([redacted]) [redacted]");
    }

    #[test]
    fn backoff_doubles_with_jitter_and_stays_bounded() {
        let policy = RetryPolicy {
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(300),
        };
        for _ in 0..50 {
            let first = policy.delay(0, None);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100), "{first:?}");
            let second = policy.delay(1, None);
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200), "{second:?}");
            assert!(policy.delay(10, None) <= Duration::from_millis(300));
        }
        assert_eq!(policy.delay(0, Some(Duration::from_secs(60))), Duration::from_millis(300));
    }
}
