//! The web console: the files of `console/` at the repository root, embedded
//! in the binary at build time (nothing is fetched at run time), served at
//! `/console/` with a strict Content-Security-Policy; `/` redirects there.
//!
//! These routes sit outside the route table ([`crate::routes::table`]): they
//! are not part of the API the OpenAPI document describes, and they need no
//! key — the page signs in with one and calls the public API with it.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use include_dir::{Dir, include_dir};

static FILES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../console");

/// Scripts and styles only from this origin, no inline script or `eval`,
/// calls only to this origin, and the page may not be framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// The console's routes: `/`, `/console`, `/console/` and `/console/{file}`.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { Redirect::temporary("/console/") }))
        .route("/console", get(|| async { Redirect::temporary("/console/") }))
        .route("/console/", get(|| async { asset("index.html") }))
        .route("/console/{*path}", get(|Path(path): Path<String>| async move { asset(&path) }))
}

/// One embedded file with its content type and the console's headers, or a
/// 404 (plain text, under the same headers) for a name the console lacks.
fn asset(path: &str) -> Response {
    let found = FILES.get_file(path).filter(|_| !path.split('/').any(|s| s.is_empty() || s.starts_with('.')));
    let mut response = match found {
        Some(file) => ([(header::CONTENT_TYPE, content_type(path))], file.contents()).into_response(),
        None => (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "Not found.\n")
            .into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The content type of a console file, by its extension.
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(content_type("app.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("README"), "application/octet-stream");
    }
}
