//! The OAuth 2.0 refresh-token grant (RFC 6749 §6) against a credential's
//! token endpoint, with the client authentication it is configured with
//! (`none`, `client_secret_basic`, `client_secret_post`) and the optional
//! `scope` and `resource` (RFC 8707). Failure reasons are built from the
//! status and the standard `error` code only: a token endpoint's free text
//! could quote a token back.

use base64::Engine as _;
use protocol::vault::{OauthRefresh, TokenEndpointAuth};
use secrets::Secret;
use serde::Deserialize;
use std::time::Duration;

/// How long one token request may take.
pub(crate) const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// A successful token response.
#[derive(Debug, Deserialize)]
pub(crate) struct TokenResponse {
    pub access_token: Secret,
    #[serde(default, deserialize_with = "seconds")]
    pub expires_in: Option<i64>,
    /// A rotated refresh token, when the server issues one.
    #[serde(default)]
    pub refresh_token: Option<Secret>,
}

/// `expires_in` as a number or a numeric string (both are seen in the wild).
fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum N {
        Int(i64),
        Float(f64),
        Text(String),
    }
    Ok(match Option::<N>::deserialize(d)? {
        None => None,
        Some(N::Int(n)) => Some(n),
        Some(N::Float(f)) => Some(f as i64),
        Some(N::Text(t)) => t.trim().parse().ok(),
    })
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: Option<String>,
}

/// RFC 6749 §2.3.1: client id and secret are form-encoded before Basic.
fn basic(client_id: &str, secret: &Secret) -> Secret {
    let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = zeroize::Zeroizing::new(format!("{}:{}", enc(client_id), enc(secret.expose())));
    Secret::new(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair.as_bytes())))
}

/// Exchanges `refresh_token` for new tokens. The error is a reason that names
/// no secret.
pub(crate) async fn refresh(
    http: &reqwest::Client,
    config: &OauthRefresh,
    refresh_token: &Secret,
    client_secret: Option<&Secret>,
) -> Result<TokenResponse, String> {
    let mut form: Vec<(&str, &str)> = vec![("grant_type", "refresh_token"), ("refresh_token", refresh_token.expose())];
    if let Some(scope) = &config.scope {
        form.push(("scope", scope));
    }
    if let Some(resource) = &config.resource {
        form.push(("resource", resource));
    }
    let mut request = http.post(&config.token_endpoint).timeout(TOKEN_TIMEOUT).header("accept", "application/json");
    match (config.token_endpoint_auth, client_secret) {
        (TokenEndpointAuth::None, _) => form.push(("client_id", &config.client_id)),
        (TokenEndpointAuth::ClientSecretPost, Some(secret)) => {
            form.push(("client_id", &config.client_id));
            form.push(("client_secret", secret.expose()));
        }
        (TokenEndpointAuth::ClientSecretBasic, Some(secret)) => {
            request = request.header("authorization", basic(&config.client_id, secret).expose());
        }
        (_, None) => return Err("no client secret is stored for the token endpoint authentication".into()),
    }
    let response = request.form(&form).send().await.map_err(|e| {
        if e.is_timeout() {
            format!("the token endpoint did not answer within {} s", TOKEN_TIMEOUT.as_secs())
        } else {
            "the token endpoint could not be reached".to_string()
        }
    })?;
    let status = response.status();
    let body = response.bytes().await.map_err(|_| "the token endpoint's answer could not be read".to_string())?;
    if !status.is_success() {
        let code = serde_json::from_slice::<ErrorResponse>(&body)
            .ok()
            .and_then(|e| e.error)
            .filter(|c| c.len() <= 64 && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'));
        return Err(match code {
            Some(code) => format!("the token endpoint answered {} ({code})", status.as_u16()),
            None => format!("the token endpoint answered {}", status.as_u16()),
        });
    }
    serde_json::from_slice::<TokenResponse>(&body)
        .map_err(|_| "the token endpoint's answer is not a token response".to_string())
}
