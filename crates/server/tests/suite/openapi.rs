//! The OpenAPI document (`GET /v1/openapi.json`): it describes exactly the
//! routes the router serves, every operation with an id, a tag, its statuses
//! and schemas, and real answers come with the statuses it declares.

use crate::support::TestServer;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashSet};
use test_support::model_server::{ModelServer, Step};

const METHODS: &[&str] = &["get", "post", "put", "patch", "delete", "head", "options", "trace"];

async fn document(s: &TestServer) -> Value {
    let resp = s.http.get(s.url("/v1/openapi.json")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "the document needs no key");
    resp.json().await.unwrap()
}

/// Every `(method, path, operation)` of the document.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let paths = doc["paths"].as_object().unwrap();
    let mut ops = Vec::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            assert!(METHODS.contains(&method.as_str()), "{path} has a key '{method}' that is no method");
            ops.push((method.clone(), path.clone(), op.clone()));
        }
    }
    ops
}

/// Follows a local `$ref` (`#/components/…`).
fn resolve<'a>(doc: &'a Value, reference: &str) -> Option<&'a Value> {
    doc.pointer(reference.strip_prefix('#')?)
}

/// Every `$ref` anywhere below `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r.clone());
            }
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// The statuses the document declares for one operation.
fn declared(doc: &Value, method: &str, path: &str) -> BTreeSet<u16> {
    let op = &doc["paths"][path][method];
    assert!(op.is_object(), "{method} {path} is not in the document");
    op["responses"].as_object().unwrap().keys().map(|k| k.parse().unwrap()).collect()
}

#[tokio::test]
async fn the_document_describes_every_route_the_router_serves_and_no_other() {
    let s = TestServer::start().await;
    let doc = document(&s).await;
    let documented: BTreeSet<(String, String)> =
        operations(&doc).into_iter().map(|(method, path, _)| (method.to_uppercase(), path)).collect();
    let served: BTreeSet<(String, String)> =
        server::routes::table::endpoints().into_iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    assert!(served.len() > 50, "the route table lists the whole API: {served:?}");
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(undocumented.is_empty(), "served but not in the document: {undocumented:?}");
    assert!(unserved.is_empty(), "in the document but not served: {unserved:?}");
}

#[tokio::test]
async fn every_operation_has_an_id_a_tag_a_success_status_and_error_bodies() {
    let s = TestServer::start().await;
    let doc = document(&s).await;
    assert_eq!(doc["openapi"], "3.0.3");
    let tags: HashSet<&str> = doc["tags"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut ids = HashSet::new();
    for (method, path, op) in operations(&doc) {
        let at = format!("{method} {path}");
        let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{at} has no operationId"));
        assert!(ids.insert(id.to_string()), "operationId {id} is used twice");
        let tag = op["tags"][0].as_str().unwrap_or_else(|| panic!("{at} has no tag"));
        assert!(tags.contains(tag), "{at}'s tag {tag} is not among the document's tags");
        let responses = op["responses"].as_object().unwrap();
        let success: Vec<&String> = responses.keys().filter(|k| k.starts_with('2')).collect();
        assert_eq!(success.len(), 1, "{at} declares one success status: {success:?}");
        for (status, response) in responses.iter().filter(|(k, _)| !k.starts_with('2')) {
            let r = response["$ref"].as_str().unwrap_or_else(|| panic!("{at} {status} is not a shared error"));
            let schema = &resolve(&doc, r).unwrap()["content"]["application/json"]["schema"];
            assert_eq!(schema["$ref"], "#/components/schemas/ErrorBody", "{at} {status}");
        }
        let public = op["security"] == json!([]);
        assert_eq!(!public, responses.contains_key("401"), "{at}: 401 exactly where a key is needed");
        if op.get("requestBody").is_some() {
            assert!(responses.contains_key("400"), "{at} takes a body, so it can answer 400");
            // JSON, or an upload (skills, files).
            let content = &op["requestBody"]["content"];
            let types = ["application/json", "multipart/form-data"];
            assert!(types.iter().any(|t| content[*t]["schema"].is_object()), "{at}");
        }
        let ok = &responses[success[0]];
        if success[0] != "202" {
            assert!(ok["content"].as_object().is_some_and(|c| !c.is_empty()), "{at} declares what it answers");
        }
        for param in op["parameters"].as_array().into_iter().flatten() {
            if param["in"] == "path" {
                assert!(path.contains(&format!("{{{}}}", param["name"].as_str().unwrap())), "{at}: {param}");
            }
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in &all {
        assert!(resolve(&doc, r).is_some_and(Value::is_object), "{r} resolves to nothing");
    }
    assert!(doc["components"]["schemas"]["Agent"]["properties"]["tools"].is_object(), "generated from protocol");
}

#[tokio::test]
async fn creates_answer_their_declared_status_and_streams_say_text_event_stream() {
    let model = ModelServer::with_script([Step::text("Hello")]).await.unwrap();
    let s = TestServer::with_model(&model).await;
    let doc = document(&s).await;
    assert_eq!(declared(&doc, "post", "/v1/agents/environments").first(), Some(&201));
    assert!(declared(&doc, "post", "/v1/agents/sessions/{session_id}/events").contains(&202));
    for (method, path) in
        [("get", "/v1/agents/sessions/{session_id}/events"), ("post", "/v1/agents/sessions"), ("post", "/v1/responses")]
    {
        let content = &doc["paths"][path][method]["responses"]["200"]["content"];
        assert!(content["text/event-stream"]["schema"].is_object(), "{method} {path} streams: {content}");
    }

    let answers = |method: &'static str, path: &'static str, status: StatusCode| {
        assert!(declared(&doc, method, path).contains(&status.as_u16()), "{method} {path} answered {status}");
    };
    let (status, agent) = s.post("/v1/agents", json!({"model": "gpt-6-luna"})).await;
    answers("post", "/v1/agents", status);
    let (status, env) = s.post("/v1/agents/environments", json!({"environment": {"type": "openai_hosted"}})).await;
    assert_eq!(status, StatusCode::CREATED);
    answers("post", "/v1/agents/environments", status);
    let session = s.session(json!({"agent_id": agent["id"], "environment": {"type": "none"}})).await;
    let sid = session["id"].as_str().unwrap();
    let input = json!({"events": [{"type": "agent.session.input.message",
                                   "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]}]});
    let (status, body) = s.post(&format!("/v1/agents/sessions/{sid}/events"), input).await;
    assert_eq!((status, body), (StatusCode::ACCEPTED, Value::Null), "202 with no body");
    answers("post", "/v1/agents/sessions/{session_id}/events", status);
    let (status, _) = s.post(&format!("/v1/agents/sessions/{sid}/events"), json!({"events": []})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    answers("post", "/v1/agents/sessions/{session_id}/events", status);
    let (status, _) = s.get("/v1/agents/agent_00000000000000000000000000000000").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    answers("get", "/v1/agents/{agent_id}", status);
    let (status, _) = s.delete(&format!("/v1/agents/environments/{}", env["id"].as_str().unwrap())).await;
    assert_eq!(status, StatusCode::OK);
    answers("delete", "/v1/agents/environments/{environment_id}", status);
    let (status, _) = s.call_as(None, reqwest::Method::GET, "/v1/agents", None).await;
    answers("get", "/v1/agents", status);
}

/// Found by the fuzz run (tests/fuzz): the statuses every keyed operation can
/// answer whatever its route — 429 past the organization's limits, 503 while
/// the database is away — and `GET /readyz`'s 503 were missing, and the
/// `Idempotency-Key` header was any string where the server takes 1 to 256
/// printable ASCII characters (so nearly every generated create was a 400).
#[tokio::test]
async fn limits_outages_and_idempotency_keys_are_declared_as_the_server_answers_them() {
    let s = TestServer::start().await;
    let doc = document(&s).await;
    for (method, path, op) in operations(&doc) {
        let at = format!("{method} {path}");
        let keyed = op["security"] != json!([]);
        let statuses = declared(&doc, &method, &path);
        assert_eq!(statuses.contains(&429), keyed, "{at}: 429 exactly where a key is needed");
        assert_eq!(statuses.contains(&503), keyed || path == "/readyz", "{at}: 503 wherever the store is asked");
        for param in op["parameters"].as_array().into_iter().flatten().filter(|p| p["name"] == "Idempotency-Key") {
            assert_eq!(
                (&param["schema"]["minLength"], &param["schema"]["maxLength"]),
                (&json!(1), &json!(256)),
                "{at}"
            );
        }
    }
    let key = &doc["paths"]["/v1/agents"]["post"]["parameters"][0];
    assert_eq!((&key["name"], &key["schema"]["pattern"]), (&json!("Idempotency-Key"), &json!("^[!-~]+$")));

    // The bounds are the server's: 256 of the last printable character pass, one more does not.
    let create = |idempotency_key: String| {
        let request = s.http.post(s.url("/v1/agents")).bearer_auth(&s.key).header("Idempotency-Key", idempotency_key);
        async move { request.json(&json!({"model": "gpt-6-luna"})).send().await.unwrap().status() }
    };
    assert_eq!(create("~".repeat(256)).await, StatusCode::OK);
    assert_eq!(create("~".repeat(257)).await, StatusCode::BAD_REQUEST);
    assert_eq!(create("!".into()).await, StatusCode::OK);

    // A response needs its `input` (the fuzz run's creates were nearly all 400s without it).
    let create = &doc["components"]["schemas"]["ResponseCreate"];
    assert_eq!(create["required"], json!(["input"]), "{create}");
    let (status, body) = s.post("/v1/responses", json!({"model": "gpt-6-luna"})).await;
    assert_eq!((status, &body["error"]["param"]), (StatusCode::BAD_REQUEST, &json!("input")), "{body}");
}
