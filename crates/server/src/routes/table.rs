//! The route table: every path and method the server answers, in one list.
//! [`super::router`] is built from it, and [`endpoints`] reads the same list,
//! so the test that compares it with the OpenAPI document checks what the
//! router really serves.

use super::{
    admin, agents, artifacts, conversations, environment_templates, environments, events, fallback, files, ops,
    responses, sessions, skills, turns, vaults,
};
use crate::state::AppState;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::Method;
use axum::middleware;
use axum::routing::{MethodFilter, MethodRouter};

/// One path and the handlers of its methods.
pub struct Route {
    pub path: &'static str,
    pub methods: Vec<Method>,
    pub(super) handlers: MethodRouter<AppState>,
}

impl Route {
    fn at(path: &'static str) -> Self {
        Self { path, methods: Vec::new(), handlers: MethodRouter::new() }
    }

    fn on<H: Handler<T, AppState>, T: 'static>(mut self, method: Method, filter: MethodFilter, handler: H) -> Self {
        self.methods.push(method);
        self.handlers = self.handlers.on(filter, handler);
        self
    }

    fn get<H: Handler<T, AppState>, T: 'static>(self, handler: H) -> Self {
        self.on(Method::GET, MethodFilter::GET, handler)
    }

    fn post<H: Handler<T, AppState>, T: 'static>(self, handler: H) -> Self {
        self.on(Method::POST, MethodFilter::POST, handler)
    }

    fn delete<H: Handler<T, AppState>, T: 'static>(self, handler: H) -> Self {
        self.on(Method::DELETE, MethodFilter::DELETE, handler)
    }

    /// Bodies of up to `bytes` (uploads), instead of the server's limit.
    fn body_limit(mut self, bytes: usize) -> Self {
        self.handlers = self.handlers.layer(DefaultBodyLimit::max(bytes));
        self
    }

    /// A last segment that is no id of `prefix` (`/v1/agents/automations`) is
    /// answered as a route this server lacks, not as a missing resource.
    fn ids_only(mut self, prefix: &'static str) -> Self {
        let check = move |req, next| fallback::ids_only(prefix, req, next);
        self.handlers = self.handlers.route_layer(middleware::from_fn(check));
        self
    }
}

/// The body limit of skill and file uploads: the larger of their limits, and
/// room for the multipart framing (each limit itself is checked, 413, by the app).
const UPLOAD_LIMIT: usize = app::skills::archive::MAX_UPLOAD_BYTES + (1 << 20);

/// Every route, with its full path.
pub fn table() -> Vec<Route> {
    vec![
        Route::at("/v1/agents").post(agents::create).get(agents::list),
        Route::at("/v1/agents/{agent_id}")
            .get(agents::retrieve)
            .post(agents::update)
            .delete(agents::delete)
            .ids_only(protocol::ids::Kind::Agent.prefix()),
        Route::at("/v1/agents/sessions").post(sessions::create).get(sessions::list),
        Route::at("/v1/agents/sessions/{session_id}")
            .get(sessions::retrieve)
            .post(sessions::update)
            .delete(sessions::delete),
        Route::at("/v1/agents/sessions/{session_id}/events").post(events::create).get(events::stream),
        Route::at("/v1/agents/sessions/{session_id}/turns").get(turns::list),
        Route::at("/v1/agents/sessions/{session_id}/turns/{turn_id}").get(turns::retrieve),
        Route::at("/v1/agents/sessions/{session_id}/turns/{turn_id}/items").get(turns::items),
        Route::at("/v1/agents/sessions/{session_id}/items").get(turns::session_items),
        Route::at("/v1/agents/sessions/{session_id}/artifacts").get(artifacts::list),
        Route::at("/v1/agents/sessions/{session_id}/artifacts/{artifact_id}")
            .get(artifacts::retrieve)
            .delete(artifacts::delete),
        Route::at("/v1/agents/sessions/{session_id}/artifacts/{artifact_id}/content").get(artifacts::content),
        Route::at("/v1/agents/environments").post(environments::create).get(environments::list),
        Route::at("/v1/agents/environments/templates")
            .post(environment_templates::create)
            .get(environment_templates::list),
        Route::at("/v1/agents/environments/templates/{environment_template_id}")
            .get(environment_templates::retrieve)
            .post(environment_templates::update)
            .delete(environment_templates::delete),
        Route::at("/v1/agents/environments/{environment_id}")
            .get(environments::retrieve)
            .delete(environments::delete)
            .ids_only(protocol::ids::EnvironmentId::PREFIX),
        Route::at("/v1/agents/environments/{environment_id}/restart").post(environments::restart),
        Route::at("/v1/agents/environments/{environment_id}/fork").post(environments::fork),
        Route::at("/v1/agents/environments/{environment_id}/files")
            .post(environments::create_file)
            .get(environments::list_files),
        Route::at("/v1/skills").post(skills::create).get(skills::list).body_limit(UPLOAD_LIMIT),
        Route::at("/v1/skills/{skill_id}").get(skills::retrieve).post(skills::update).delete(skills::delete),
        Route::at("/v1/skills/{skill_id}/content").get(skills::content),
        Route::at("/v1/skills/{skill_id}/versions")
            .post(skills::create_version)
            .get(skills::list_versions)
            .body_limit(UPLOAD_LIMIT),
        Route::at("/v1/skills/{skill_id}/versions/{version}")
            .get(skills::retrieve_version)
            .delete(skills::delete_version),
        Route::at("/v1/skills/{skill_id}/versions/{version}/content").get(skills::version_content),
        Route::at("/v1/files").post(files::create).get(files::list).body_limit(UPLOAD_LIMIT),
        Route::at("/v1/files/{file_id}").get(files::retrieve).delete(files::delete),
        Route::at("/v1/files/{file_id}/content").get(files::content),
        Route::at("/v1/vaults").post(vaults::create).get(vaults::list),
        Route::at("/v1/vaults/{vault_id}").get(vaults::retrieve).post(vaults::update).delete(vaults::delete),
        Route::at("/v1/vaults/{vault_id}/credentials").post(vaults::create_credential).get(vaults::list_credentials),
        Route::at("/v1/vaults/{vault_id}/credentials/{credential_id}")
            .get(vaults::retrieve_credential)
            .post(vaults::update_credential)
            .delete(vaults::delete_credential),
        Route::at("/v1/responses").post(responses::create),
        Route::at("/v1/responses/input_tokens").post(responses::input_tokens),
        Route::at("/v1/responses/{response_id}").get(responses::retrieve).delete(responses::delete),
        Route::at("/v1/responses/{response_id}/cancel").post(responses::cancel),
        Route::at("/v1/responses/{response_id}/input_items").get(responses::input_items),
        Route::at("/v1/conversations").post(conversations::create),
        Route::at("/v1/conversations/{conversation_id}")
            .get(conversations::retrieve)
            .post(conversations::update)
            .delete(conversations::delete),
        Route::at("/v1/conversations/{conversation_id}/items")
            .get(conversations::list_items)
            .post(conversations::create_items),
        Route::at("/v1/conversations/{conversation_id}/items/{item_id}")
            .get(conversations::retrieve_item)
            .delete(conversations::delete_item),
        Route::at("/v1/admin/organizations").post(admin::create_organization),
        Route::at("/v1/admin/keys").post(admin::create_key).get(admin::list_keys),
        Route::at("/v1/admin/keys/{key_id}").delete(admin::revoke_key),
        Route::at("/v1/openapi.json").get(ops::openapi),
        Route::at("/healthz").get(ops::healthz),
        Route::at("/readyz").get(ops::readyz),
        Route::at("/metrics").get(ops::metrics),
    ]
}

/// Every method and path the router serves (`GET` also answers `HEAD`).
pub fn endpoints() -> Vec<(Method, &'static str)> {
    table().into_iter().flat_map(|r| r.methods.into_iter().map(move |m| (m, r.path))).collect()
}
