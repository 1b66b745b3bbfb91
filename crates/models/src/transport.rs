//! HTTP plumbing shared by the providers: one `reqwest::Client` per provider,
//! sending a request body with the response-header timeout, and retrying
//! retryable failures with backoff. Everything here happens before the first
//! byte of a successful response, so retrying never duplicates output.

use crate::error::{ModelError, Result, TimeoutPhase};
use crate::settings::ProviderSettings;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue};
use std::error::Error as _;
use std::time::Duration;

/// Longest part of an upstream error body kept in an error message.
const ERROR_BODY_LIMIT: usize = 2000;

/// Where one provider sends its requests, and how.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub(crate) provider: String,
    url: String,
    /// `url` parsed once (parsing it for each request costs as much as
    /// sending it); none when it does not parse, and the request says why.
    parsed: Option<reqwest::Url>,
    client: reqwest::Client,
    pub(crate) settings: ProviderSettings,
}

impl Endpoint {
    /// `headers` are sent with every request; mark secret ones sensitive.
    pub(crate) fn new(provider: String, url: String, headers: HeaderMap, settings: ProviderSettings) -> Result<Self> {
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(settings.timeouts.connect)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ModelError::Config {
                message: format!("model provider `{provider}`: cannot build HTTP client: {}", describe(&e)),
            })?;
        let parsed = reqwest::Url::parse(&url).ok();
        Ok(Self { provider, url, parsed, client, settings })
    }

    /// Sends `body` as JSON and returns the 2xx response whose body is still
    /// unread, retrying retryable failures as the retry policy allows.
    pub(crate) async fn send(&self, body: Bytes) -> Result<reqwest::Response> {
        let mut attempt = 1;
        loop {
            let (error, retry_after) = match self.send_once(body.clone(), attempt).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            let retry = attempt - 1;
            if !error.is_retryable() || retry >= self.settings.retry.max_retries {
                return Err(error);
            }
            let delay = self.settings.retry.delay(retry, retry_after);
            tracing::warn!(
                provider = %self.provider,
                attempt,
                status = error.status(),
                delay_ms = delay.as_millis() as u64,
                error = %error,
                "retrying model request"
            );
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    async fn send_once(&self, body: Bytes, attempt: u32) -> Result<reqwest::Response, (ModelError, Option<Duration>)> {
        let request = match &self.parsed {
            Some(url) => self.client.post(url.clone()),
            None => self.client.post(&self.url),
        };
        let request = request.header("content-type", "application/json").body(body).send();
        let response = match tokio::time::timeout(self.settings.timeouts.response, request).await {
            Err(_) => return Err((self.timeout(TimeoutPhase::ResponseHeaders), None)),
            Ok(Err(error)) => return Err((self.request_error(&error, attempt), None)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|secs| secs.is_finite() && *secs >= 0.0)
            .map(|secs| Duration::from_secs_f64(secs.min(3600.0)));
        let body = match tokio::time::timeout(self.settings.timeouts.idle, response.bytes()).await {
            Ok(Ok(bytes)) => trim_body(&bytes),
            Ok(Err(error)) => format!("(body unreadable: {})", describe(&error)),
            Err(_) => "(body not received in time)".to_owned(),
        };
        let error =
            ModelError::Status { provider: self.provider.clone(), status: status.as_u16(), body, attempts: attempt };
        Err((error, retry_after))
    }

    pub(crate) fn timeout(&self, phase: TimeoutPhase) -> ModelError {
        let after = match phase {
            TimeoutPhase::Connect => self.settings.timeouts.connect,
            TimeoutPhase::ResponseHeaders => self.settings.timeouts.response,
            TimeoutPhase::Idle => self.settings.timeouts.idle,
        };
        ModelError::Timeout { provider: self.provider.clone(), phase, after }
    }

    fn request_error(&self, error: &reqwest::Error, attempt: u32) -> ModelError {
        // reqwest reports its connect timeout as a connect error that is
        // also a timeout; both are retryable.
        if error.is_timeout() {
            return self.timeout(TimeoutPhase::Connect);
        }
        if error.is_connect() {
            return ModelError::Connect {
                provider: self.provider.clone(),
                url: self.url.clone(),
                message: describe(error),
                attempts: attempt,
            };
        }
        ModelError::Transport { provider: self.provider.clone(), message: describe(error) }
    }

    /// The error for a failure while reading the streamed body.
    pub(crate) fn body_error(&self, error: &reqwest::Error) -> ModelError {
        ModelError::Transport { provider: self.provider.clone(), message: describe(error) }
    }
}

/// A header value that never shows up in `Debug` output of the header map.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue> {
    let mut value = HeaderValue::from_str(value).map_err(|_| ModelError::Config {
        message: "the API key contains characters that cannot go in an HTTP header".to_owned(),
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The error and its causes on one line, without the URL (which is named
/// separately where it helps) and never with a header.
fn describe(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut current: Option<&dyn std::error::Error> = error.source();
    let head = error.to_string();
    // reqwest's own text ends with " for url (…)"; the causes carry the detail.
    text.push_str(head.split(" for url (").next().unwrap_or(&head));
    while let Some(cause) = current {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        current = cause.source();
    }
    text
}

fn trim_body(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".to_owned();
    }
    match text.char_indices().nth(ERROR_BODY_LIMIT) {
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], bytes.len()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_error_bodies_are_trimmed() {
        let body = "x".repeat(5000);
        let trimmed = trim_body(body.as_bytes());
        assert!(trimmed.starts_with(&"x".repeat(ERROR_BODY_LIMIT)));
        assert!(trimmed.ends_with("… (5000 bytes in all)"));
        assert_eq!(trim_body(b"  "), "(empty body)");
    }
}
