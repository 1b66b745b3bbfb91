//! `GET /v1/openapi.json`: an OpenAPI 3.0 document of every route the server
//! serves (`routes::table`; a test holds the two together), each operation
//! with an `operationId`, a tag, the status it really answers, its error
//! statuses and its request and response schemas. The schemas are generated
//! from the `protocol` types, so they cannot drift from what the handlers
//! accept and answer; the few answers built as JSON values have schemas
//! written beside their builders' shapes (`views`).

use op::{ERRORS, Op, of};
use protocol::error::ErrorBody;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

mod admin;
mod environment_templates;
mod environments;
mod op;
mod responses;
mod sessions;
mod skills;
mod views;

/// The document being built: the operations by path, the tags in order,
/// and the generator that collects every schema they name.
struct Doc {
    generator: SchemaGenerator,
    paths: Map<String, Value>,
    tags: Vec<Value>,
}

impl Doc {
    /// Starts a section: the operations added next carry the tag `name`.
    fn tag(&mut self, name: &str, description: &str) {
        self.tags.push(json!({"name": name, "description": description}));
    }

    fn add(&mut self, op: Op) {
        let tag = self.tags.last().and_then(|t| t["name"].as_str()).unwrap_or("Other").to_string();
        let (method, path) = (op.method, op.path);
        let rendered = op.render(&tag, &mut self.generator);
        let entry = self.paths.entry(path.to_string()).or_insert_with(|| json!({}));
        entry[method] = rendered;
    }
}

fn build() -> Value {
    let mut doc = Doc { generator: SchemaSettings::openapi3().into_generator(), paths: Map::new(), tags: Vec::new() };
    let error = of::<ErrorBody>(&mut doc.generator);
    sessions::add(&mut doc);
    environments::add(&mut doc);
    environment_templates::add(&mut doc);
    responses::add(&mut doc);
    skills::add(&mut doc);
    admin::add(&mut doc);
    let responses: Map<String, Value> = ERRORS
        .iter()
        .map(|(_, name, description)| {
            let body = json!({"description": description, "content": {"application/json": {"schema": error}}});
            (name.to_string(), body)
        })
        .collect();
    let schemas = doc.generator.take_definitions(true);
    json!({
        "openapi": "3.0.3",
        "info": {"title": "rebyte", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Self-hosted agent platform: the OpenAI Agents API (beta) and its Rebyte extensions. \
                                 Errors are `{\"error\":{type,code,message,param}}`; lists page with `limit`, \
                                 `after`, `before` and `order`."},
        "servers": [{"url": "/"}],
        "tags": doc.tags,
        "components": {
            "schemas": schemas,
            "responses": responses,
            "securitySchemes": {"bearer_auth": {"type": "http", "scheme": "bearer",
                                                "description": "An `rbk_` API key."}}
        },
        "security": [{"bearer_auth": []}],
        "paths": doc.paths,
    })
}

/// The document, built once.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(build)
}
