//! One operation of the document, described the way its handler answers:
//! the success status and content types (JSON, a server-sent event stream,
//! bytes), the request body, the query and header parameters, and the error
//! statuses it can answer, each with the `ErrorBody` schema.

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// Produces a schema (usually a `$ref`), registering what it refers to.
pub(super) type SchemaFn = fn(&mut SchemaGenerator) -> Value;

/// The schema of a `protocol` type.
pub(super) fn of<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    let mut schema = g.subschema_for::<T>();
    // Definitions get the OpenAPI transforms when they are taken; a schema
    // inlined here (`Vec<T>`, `Option<T>`) needs them now.
    for transform in g.transforms_mut() {
        transform.transform(&mut schema);
    }
    schema.to_value()
}

/// The error responses, by status: the name of their entry under
/// `components.responses` and what they mean.
pub(super) const ERRORS: &[(u16, &str, &str)] = &[
    (400, "BadRequest", "The request is invalid; `param` names the field at fault."),
    (401, "Unauthorized", "The API key is missing, unknown or revoked."),
    (403, "Forbidden", "The API key lacks the scope this operation needs."),
    (404, "NotFound", "No such resource in the caller's organization."),
    (409, "Conflict", "The resource's state does not allow this now."),
    (413, "TooLarge", "The request body is larger than the server accepts."),
    (
        429,
        "TooManyRequests",
        "Past a limit: the organization's request rate or active turns (`Retry-After` says when to retry), or \
         the session's queue of turns.",
    ),
    (500, "ServerError", "The server failed; the cause is logged, not shown."),
    (503, "Unavailable", "The database, or the node running the environment, cannot be reached; retry later."),
];

/// One operation, built up by its section and rendered by [`super::Doc`].
pub(super) struct Op {
    pub(super) method: &'static str,
    pub(super) path: &'static str,
    id: &'static str,
    summary: &'static str,
    description: Option<&'static str>,
    request: Option<(SchemaFn, bool, &'static str)>,
    status: u16,
    content: Vec<(&'static str, SchemaFn)>,
    params: Vec<Value>,
    errors: BTreeSet<u16>,
    public: bool,
}

impl Op {
    fn new(method: &'static str, path: &'static str, id: &'static str, summary: &'static str) -> Self {
        let params: Vec<Value> = path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let mut errors = BTreeSet::from([401, 403, 429, 500, 503]);
        if !params.is_empty() {
            // A malformed id is a 400; an id this organization cannot see, a 404.
            errors.extend([400, 404]);
        }
        Op {
            method,
            path,
            id,
            summary,
            description: None,
            request: None,
            status: 200,
            content: Vec::new(),
            params,
            errors,
            public: false,
        }
    }

    pub(super) fn get(path: &'static str, id: &'static str, summary: &'static str) -> Self {
        Self::new("get", path, id, summary)
    }

    pub(super) fn post(path: &'static str, id: &'static str, summary: &'static str) -> Self {
        Self::new("post", path, id, summary)
    }

    pub(super) fn delete(path: &'static str, id: &'static str, summary: &'static str) -> Self {
        Self::new("delete", path, id, summary)
    }

    /// A longer explanation.
    pub(super) fn about(mut self, description: &'static str) -> Self {
        self.description = Some(description);
        self
    }

    /// A JSON request body (an empty body reads as `{}`).
    pub(super) fn body(mut self, schema: SchemaFn) -> Self {
        self.request = Some((schema, true, "application/json"));
        self.errors.extend([400, 413]);
        self
    }

    /// A `multipart/form-data` request body (an upload).
    pub(super) fn multipart(mut self, schema: SchemaFn) -> Self {
        self.request = Some((schema, true, "multipart/form-data"));
        self.errors.extend([400, 413]);
        self
    }

    /// A JSON request body that may be left out.
    pub(super) fn optional_body(self, schema: SchemaFn) -> Self {
        let mut op = self.body(schema);
        op.request = op.request.map(|(s, _, ct)| (s, false, ct));
        op
    }

    /// Answers `schema` as JSON.
    pub(super) fn json(self, schema: SchemaFn) -> Self {
        self.answers("application/json", schema)
    }

    /// Answers a server-sent event stream whose `data:` lines are `schema`.
    pub(super) fn stream(self, schema: SchemaFn) -> Self {
        self.answers("text/event-stream", schema)
    }

    /// Answers `schema` with `content_type`.
    pub(super) fn answers(mut self, content_type: &'static str, schema: SchemaFn) -> Self {
        self.content.push((content_type, schema));
        self
    }

    /// The success status, when it is not 200.
    pub(super) fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// Error statuses beyond the ones every operation of its kind answers.
    pub(super) fn errors(mut self, statuses: &[u16]) -> Self {
        self.errors.extend(statuses);
        self
    }

    /// A query parameter.
    pub(super) fn query(mut self, name: &str, schema: Value, description: &str) -> Self {
        self.params.push(json!({"name": name, "in": "query", "required": false, "schema": schema,
                                "description": description}));
        self.errors.insert(400);
        self
    }

    /// `metadata[key]=value` filters.
    pub(super) fn metadata_filter(mut self) -> Self {
        self.params.push(json!({
            "name": "metadata", "in": "query", "required": false, "style": "deepObject", "explode": true,
            "schema": {"type": "object", "additionalProperties": {"type": "string"}},
            "description": "`metadata[key]=value`: only resources whose metadata has every pair."
        }));
        self
    }

    /// The cursor parameters of a list: `limit`, `after`, `before`, `order`.
    pub(super) fn list(self) -> Self {
        self.query("limit", json!({"type": "integer", "minimum": 1, "maximum": 100, "default": 20}), "Page size.")
            .query("after", json!({"type": "string"}), "Start after this id.")
            .query("before", json!({"type": "string"}), "End before this id (not with `after`).")
            .query("order", json!({"type": "string", "enum": ["asc", "desc"], "default": "desc"}), "By creation.")
    }

    /// A request header.
    pub(super) fn header(mut self, name: &str, schema: Value, description: &str) -> Self {
        self.params.push(json!({"name": name, "in": "header", "required": false, "schema": schema,
                                "description": description}));
        self.errors.insert(400);
        self
    }

    /// A create that honours `Idempotency-Key`.
    pub(super) fn idempotent(self) -> Self {
        // What `app::idempotency` accepts: 1 to 256 printable ASCII characters.
        let schema = json!({"type": "string", "minLength": 1, "maxLength": 256, "pattern": "^[!-~]+$"});
        self.header(
            "Idempotency-Key",
            schema,
            "A retry with the same key and body answers the first request's result (kept 24 hours); the same \
             key with another body, or while the first still runs, is a 409.",
        )
        .errors(&[409])
    }

    /// Needs no API key, and answers without the store (add 503 where it does not).
    pub(super) fn public(mut self) -> Self {
        self.public = true;
        self.errors.retain(|s| ![401, 403, 429, 503].contains(s));
        self
    }

    /// The operation object, tagged `tag`.
    pub(super) fn render(self, tag: &str, g: &mut SchemaGenerator) -> Value {
        let mut responses = Map::new();
        let description = if self.status == 202 { "Accepted" } else { "OK" };
        let mut success = json!({"description": description});
        if !self.content.is_empty() {
            let content: Map<String, Value> =
                self.content.iter().map(|(ct, schema)| (ct.to_string(), json!({"schema": schema(g)}))).collect();
            success["content"] = Value::Object(content);
        }
        responses.insert(self.status.to_string(), success);
        for status in &self.errors {
            if let Some((_, name, _)) = ERRORS.iter().find(|(s, _, _)| s == status) {
                responses.insert(status.to_string(), json!({"$ref": format!("#/components/responses/{name}")}));
            }
        }
        let mut op = json!({"operationId": self.id, "tags": [tag], "summary": self.summary, "responses": responses});
        if let Some(description) = self.description {
            op["description"] = json!(description);
        }
        if let Some((schema, required, content_type)) = self.request {
            op["requestBody"] = json!({"required": required, "content": {content_type: {"schema": schema(g)}}});
        }
        if !self.params.is_empty() {
            op["parameters"] = Value::Array(self.params);
        }
        if self.public {
            op["security"] = json!([]);
        }
        op
    }
}
