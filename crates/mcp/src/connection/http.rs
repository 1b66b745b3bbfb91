//! Opening a Streamable HTTP connection (POST with JSON or SSE answers, the GET SSE notification
//! stream) with rmcp's transport over our own reqwest client: it sends the configured
//! `Authorization` and headers as given, and records how the session's `DELETE` ended so
//! [`Connection::terminate`] can report it (404 and 405 mean the session is already gone).

use super::{Connection, Timeouts, stdio::handshake};
use crate::config::HttpConfig;
use crate::error::{McpError, Result, Step};
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use reqwest013 as reqwest;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How closing a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Termination {
    /// Stdio streams closed (and a host process stopped).
    Closed,
    /// The HTTP server accepted the session's `DELETE`.
    Deleted,
    /// The HTTP server answered `DELETE` with this status (404 or 405): nothing left to delete.
    AlreadyGone(u16),
    /// The HTTP server never assigned a session, so there was nothing to delete.
    NoSession,
    /// The connection had been closed before.
    AlreadyClosed,
}

/// Where the `DELETE` outcome lands; rmcp sends it from its worker task while closing.
#[derive(Debug, Default)]
pub(crate) struct TerminationSlot(Mutex<Option<Result<Termination>>>);

impl TerminationSlot {
    fn put(&self, outcome: Result<Termination>) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(outcome);
    }

    pub(crate) fn outcome(&self, _label: &str) -> Result<Termination> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take().unwrap_or(Ok(Termination::NoSession))
    }
}

/// reqwest with our `DELETE`; everything else is rmcp's reqwest implementation.
#[derive(Clone)]
struct Client {
    inner: reqwest::Client,
    label: Arc<str>,
    slot: Arc<TerminationSlot>,
}

type Outcome<T> = std::result::Result<T, StreamableHttpError<reqwest::Error>>;

impl StreamableHttpClient for Client {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Outcome<StreamableHttpPostResponse> {
        self.inner.post_message(uri, message, session_id, auth_header, custom_headers).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Outcome<StreamableHttpPostResponse> {
        self.inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Outcome<StreamableHttpPostResponse> {
        self.inner
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Outcome<()> {
        let mut request = self.inner.delete(uri.as_ref()).header("mcp-session-id", session_id.as_ref());
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        let outcome = match request.send().await {
            Ok(response) => match response.status().as_u16() {
                status if (200..300).contains(&status) => Ok(Termination::Deleted),
                status @ (404 | 405) => Ok(Termination::AlreadyGone(status)),
                status => Err(McpError::Transport {
                    server: self.label.to_string(),
                    step: Step::Terminate,
                    message: format!("DELETE of the MCP session answered HTTP {status}"),
                }),
            },
            Err(error) => Err(McpError::Transport {
                server: self.label.to_string(),
                step: Step::Terminate,
                message: error.without_url().to_string(),
            }),
        };
        self.slot.put(outcome);
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Outcome<BoxStream<'static, std::result::Result<sse_stream::Sse, SseError>>> {
        self.inner.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Outcome<BoxStream<'static, std::result::Result<sse_stream::Sse, SseError>>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

fn tls_config(label: &str) -> Result<rustls::ClientConfig> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config_error = |e: rustls::Error| McpError::Config { server: label.to_owned(), message: format!("TLS: {e}") };
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(config_error)?
        .with_platform_verifier()
        .map_err(config_error)?
        .with_no_client_auth())
}

fn headers(label: &str, config: &HttpConfig) -> Result<HashMap<HeaderName, HeaderValue>> {
    let invalid =
        |name: &str, why: &str| McpError::Config { server: label.to_owned(), message: format!("header {name}: {why}") };
    let mut out = HashMap::new();
    let all = config
        .authorization
        .iter()
        .map(|value| ("authorization", value))
        .chain(config.headers.iter().map(|(name, value)| (name.as_str(), value)));
    for (name, value) in all {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid(name, "not a valid header name"))?;
        let mut value = HeaderValue::from_str(value.expose()).map_err(|_| invalid(name, "not a valid header value"))?;
        value.set_sensitive(true);
        out.insert(header, value);
    }
    Ok(out)
}

impl Connection {
    /// Connects to a Streamable HTTP MCP endpoint, sending `config.authorization` (as the whole
    /// `Authorization` value) and `config.headers` with every request, the `DELETE` included.
    pub async fn connect_http(label: impl Into<String>, config: &HttpConfig, timeouts: Timeouts) -> Result<Self> {
        Self::connect_http_via(label, config, timeouts, None).await
    }

    /// [`Connection::connect_http`] through an HTTP proxy (every request, `localhost` included):
    /// how an environment-origin connection originates inside its sandbox.
    pub async fn connect_http_via(
        label: impl Into<String>,
        config: &HttpConfig,
        timeouts: Timeouts,
        proxy: Option<&crate::hub::HttpProxy>,
    ) -> Result<Self> {
        let label: Arc<str> = Arc::from(label.into());
        let custom_headers = headers(&label, config)?;
        let config_error = |e: reqwest::Error| McpError::Config { server: label.to_string(), message: e.to_string() };
        let mut builder = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config(&label)?)
            .connect_timeout(Duration::from_secs(10));
        if let Some(p) = proxy {
            builder =
                builder.proxy(reqwest::Proxy::all(&p.url).map_err(config_error)?.basic_auth(&p.username, &p.password));
        }
        let inner = builder.build().map_err(config_error)?;
        let slot = Arc::new(TerminationSlot::default());
        let client = Client { inner, label: label.clone(), slot: slot.clone() };
        let transport_config =
            StreamableHttpClientTransportConfig::with_uri(config.url.as_str()).custom_headers(custom_headers);
        let transport = StreamableHttpClientTransport::with_client(client, transport_config);
        let service = handshake(&label, transport, &timeouts).await?;
        Ok(Connection::from_service(label, service, timeouts, Some(slot)))
    }
}
