//! The web console: its embedded files at `/console/`, served without a key
//! under a strict Content-Security-Policy, and `/` redirecting there.

use crate::support::TestServer;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

fn header(resp: &reqwest::Response, name: impl reqwest::header::AsHeaderName) -> &str {
    resp.headers().get(name).map_or("", |v| v.to_str().unwrap())
}

#[tokio::test]
async fn the_console_page_is_served_without_a_key_under_a_strict_policy() {
    let s = TestServer::start().await;
    let resp = no_redirects().get(s.url("/console/")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, CONTENT_TYPE), "text/html; charset=utf-8");
    let csp = header(&resp, CONTENT_SECURITY_POLICY).to_string();
    assert!(csp.starts_with("default-src 'self';"), "{csp}");
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), "{csp}");
    assert_eq!(header(&resp, "x-content-type-options"), "nosniff");
    assert_eq!(header(&resp, "referrer-policy"), "no-referrer");
    let html = resp.text().await.unwrap();
    assert!(html.contains(r#"<script type="module" src="app.js"></script>"#), "{html}");
    assert!(!html.contains("http://") && !html.contains("https://"), "nothing from elsewhere: {html}");
}

#[tokio::test]
async fn the_console_script_is_a_javascript_module_and_its_style_css() {
    let s = TestServer::start().await;
    let resp = no_redirects().get(s.url("/console/app.js")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(header(&resp, CONTENT_TYPE), "text/javascript; charset=utf-8");
    assert!(header(&resp, CONTENT_SECURITY_POLICY).starts_with("default-src 'self';"));
    let js = resp.text().await.unwrap();
    assert!(js.contains("sessionStorage"), "the key is kept in the tab");
    assert!(!js.contains("innerHTML"), "data is rendered as text");
    let css = no_redirects().get(s.url("/console/style.css")).send().await.unwrap();
    assert_eq!(css.status(), StatusCode::OK);
    assert_eq!(header(&css, CONTENT_TYPE), "text/css; charset=utf-8");
}

#[tokio::test]
async fn the_root_and_bare_console_path_redirect_to_the_console() {
    let s = TestServer::start().await;
    for path in ["/", "/console"] {
        let resp = no_redirects().get(s.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::TEMPORARY_REDIRECT, "{path}");
        assert_eq!(header(&resp, LOCATION), "/console/", "{path}");
    }
}

#[tokio::test]
async fn an_unknown_console_file_is_a_404_under_the_same_policy() {
    let s = TestServer::start().await;
    for path in ["/console/nope.js", "/console/..%2f..%2fCargo.toml", "/console/.hidden"] {
        let resp = no_redirects().get(s.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND, "{path}");
        assert!(header(&resp, CONTENT_SECURITY_POLICY).starts_with("default-src 'self';"), "{path}");
    }
    // The API is unchanged: its paths still need a key.
    let resp = no_redirects().get(s.url("/v1/agents/sessions")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}
