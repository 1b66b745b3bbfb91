//! Model names resolve to providers from the environment and rebyte.toml,
//! with the precedence documented in `models::registry`.

use super::fast_settings;
use models::{ModelError, ModelRequest, ModelResponse, Registry};
use test_support::model_server::{ModelServer, Step};

fn registry(vars: &[(&str, &str)], toml: Option<&str>) -> Result<Registry, ModelError> {
    let builder = Registry::builder().env_vars(vars.iter().copied()).settings(fast_settings());
    match toml {
        Some(text) => builder.config_toml(text),
        None => builder,
    }
    .build()
}

#[test]
fn an_unknown_model_with_no_provider_configured_is_an_error_naming_it() {
    let registry = registry(&[], None).unwrap();
    let error = registry.resolve("gpt-6-luna").unwrap_err();
    assert_eq!(error, ModelError::UnknownModel { model: "gpt-6-luna".into() });
    assert!(error.to_string().starts_with("no model provider serves model `gpt-6-luna`"), "{error}");
    assert_eq!(error.code(), "model_not_found");
}

#[tokio::test]
async fn without_config_every_model_goes_to_openai_at_openai_base_url() {
    let server = ModelServer::with_script([Step::text("hi")]).await.unwrap();
    let registry = registry(&[("OPENAI_BASE_URL", &server.base_url()), ("OPENAI_API_KEY", "sk-env")], None).unwrap();
    let model = registry.resolve("gpt-6-luna").unwrap();
    assert_eq!(
        (model.name.as_str(), model.upstream.as_str(), model.provider.name()),
        ("gpt-6-luna", "gpt-6-luna", "openai")
    );
    let answer = ModelResponse::collect(model.stream(&model.request())).await.unwrap();
    assert_eq!(answer.text, "hi");
    let sent = &server.requests()[0];
    assert_eq!(sent.body["model"], "gpt-6-luna");
    assert_eq!(sent.headers["authorization"], "Bearer sk-env");
}

#[tokio::test]
async fn claude_models_go_to_anthropic_when_its_key_is_set() {
    let server = ModelServer::with_script([Step::text("from claude")]).await.unwrap();
    let vars = [
        ("OPENAI_API_KEY", "sk-openai"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("ANTHROPIC_BASE_URL", server.anthropic_base_url().leak() as &str),
    ];
    let registry = registry(&vars, None).unwrap();
    assert_eq!(registry.resolve("gpt-4o").unwrap().provider.name(), "openai");
    let model = registry.resolve("claude-sonnet-9").unwrap();
    assert_eq!(model.provider.name(), "anthropic");
    let answer = ModelResponse::collect(model.stream(&model.request())).await.unwrap();
    assert_eq!(answer.text, "from claude");
    assert_eq!(server.requests()[0].path, "/v1/messages");
    assert_eq!(server.requests()[0].headers["x-api-key"], "sk-ant");
}

#[test]
fn claude_models_go_to_openai_when_no_anthropic_key_is_set() {
    let registry = registry(&[("OPENAI_API_KEY", "sk")], None).unwrap();
    assert_eq!(registry.resolve("claude-sonnet-9").unwrap().provider.name(), "openai");
}

#[tokio::test]
async fn rebyte_toml_maps_a_model_to_a_provider_base_url_key_and_upstream_name() {
    let server = ModelServer::with_script([Step::text("luna speaking")]).await.unwrap();
    let toml = format!(
        r#"
        [models."gpt-6-luna"]
        provider = "openai"
        base_url = "{}"
        api_key_env = "LUNA_KEY"
        upstream = "real-name"
        "#,
        server.base_url()
    );
    let registry = registry(&[("LUNA_KEY", "sk-luna")], Some(&toml)).unwrap();
    let model = registry.resolve("gpt-6-luna").unwrap();
    assert_eq!(model.upstream, "real-name");
    let answer = ModelResponse::collect(model.stream(&model.request())).await.unwrap();
    assert_eq!(answer.text, "luna speaking");
    let sent = &server.requests()[0];
    assert_eq!(sent.body["model"], "real-name");
    assert_eq!(sent.headers["authorization"], "Bearer sk-luna");
    assert!(
        matches!(registry.resolve("other"), Err(ModelError::UnknownModel { .. })),
        "only the mapped name is served"
    );
}

#[tokio::test]
async fn named_providers_in_rebyte_toml_serve_the_models_that_name_them() {
    let server = ModelServer::with_script([Step::text("local")]).await.unwrap();
    let toml = format!(
        r#"
        [providers.local]
        kind = "anthropic"
        base_url = "{}"
        idle_timeout_ms = 250

        [models."claude-local"]
        provider = "local"
        "#,
        server.anthropic_base_url()
    );
    let registry = registry(&[("ANTHROPIC_API_KEY", "sk-ant")], Some(&toml)).unwrap();
    let model = registry.resolve("claude-local").unwrap();
    assert_eq!(model.provider.name(), "local", "the file's entry wins over the claude-* rule");
    let answer = ModelResponse::collect(model.stream(&ModelRequest::new(model.upstream.clone()))).await.unwrap();
    assert_eq!(answer.text, "local");
    assert!(!server.requests()[0].headers.contains_key("x-api-key"), "`local` names no key variable");
}

#[tokio::test]
async fn an_openai_responses_provider_posts_to_responses_with_its_key() {
    let server = ModelServer::with_script([Step::text("from responses")]).await.unwrap();
    let toml = format!(
        r#"
        [providers.current]
        kind = "openai_responses"
        base_url = "{}"
        api_key_env = "CURRENT_KEY"

        [models."gpt-current"]
        provider = "current"
        "#,
        server.base_url()
    );
    let registry = registry(&[("CURRENT_KEY", "sk-cur")], Some(&toml)).unwrap();
    let model = registry.resolve("gpt-current").unwrap();
    let answer = ModelResponse::collect(model.stream(&ModelRequest::new(model.upstream.clone()))).await.unwrap();
    assert_eq!(answer.text, "from responses");
    let sent = &server.requests()[0];
    assert_eq!((sent.path.as_str(), sent.headers["authorization"].as_str()), ("/v1/responses", "Bearer sk-cur"));
}

#[test]
fn a_providers_openai_table_makes_openai_the_default_route() {
    let toml = "[providers.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\n";
    let registry = registry(&[], Some(toml)).unwrap();
    assert_eq!(registry.resolve("anything").unwrap().provider.name(), "openai");
}

#[test]
fn a_missing_key_variable_fails_only_the_models_that_need_it_naming_the_variable() {
    let toml = r#"
        [models."needs-key"]
        provider = "openai"
        api_key_env = "MISSING_KEY"
    "#;
    let registry = registry(&[("OPENAI_API_KEY", "sk")], Some(toml)).unwrap();
    let error = registry.resolve("needs-key").unwrap_err();
    assert!(matches!(error, ModelError::Config { .. }), "{error:?}");
    assert!(error.to_string().contains("needs-key") && error.to_string().contains("MISSING_KEY"), "{error}");
    assert!(registry.resolve("gpt-4o").is_ok());
}

#[test]
fn a_model_naming_an_undefined_provider_fails_the_build() {
    let error = registry(&[], Some("[models.m]\nprovider = \"nowhere\"\n")).unwrap_err();
    assert!(error.to_string().contains("nowhere"), "{error}");
}

#[test]
fn a_provider_without_a_kind_fails_the_build() {
    let error = registry(&[], Some("[providers.x]\nbase_url = \"http://h\"\n")).unwrap_err();
    assert!(error.to_string().contains("[providers.x] needs `kind"), "{error}");
}

#[test]
fn a_config_file_that_does_not_exist_is_an_error_naming_it() {
    let error =
        Registry::builder().env_vars::<&str, &str>([]).config_file("/nonexistent/rebyte.toml").build().unwrap_err();
    assert!(error.to_string().contains("/nonexistent/rebyte.toml"), "{error}");
}
