//! Which provider serves a model name, and under which upstream name.
//!
//! # Precedence
//! A model name is resolved by the first rule that matches:
//! 1. `[models."<name>"]` in rebyte.toml (exact name): its `provider`, with
//!    its own `base_url` / `api_key_env` if given, and `upstream` (default:
//!    the name itself).
//! 2. A `claude-*` name goes to the `anthropic` provider, when that one is
//!    configured: `ANTHROPIC_API_KEY` is set or rebyte.toml has
//!    `[providers.anthropic]`.
//! 3. Any other name goes to the `openai` provider, when that one is
//!    configured: `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set, or rebyte.toml
//!    has `[providers.openai]`.
//! 4. Otherwise the name is unknown: [`ModelError::UnknownModel`] names it.
//!
//! Each setting of a provider comes from, in order: the model's own entry,
//! the `[providers.<name>]` table, the environment (`OPENAI_BASE_URL`,
//! `OPENAI_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` for the
//! built-in `openai` and `anthropic`), the built-in default.
//!
//! Errors in the file itself (syntax, unknown keys, a provider that does not
//! exist) fail [`RegistryBuilder::build`]. A key variable named by
//! `api_key_env` but not set fails only the models that need it, at
//! [`Registry::resolve`], so one missing key does not stop the server.

mod config;

pub use config::ProviderKind;

use crate::anthropic::Anthropic;
use crate::error::{ModelError, Result};
use crate::openai::OpenAiChat;
use crate::openai_responses::OpenAiResponses;
use crate::provider::{ModelStream, Provider};
use crate::settings::{ApiKey, ProviderConfig, ProviderSettings};
use crate::types::ModelRequest;
use config::{FileConfig, ModelEntry, ProviderEntry};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// A model name, resolved.
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    /// The name the agent asked for.
    pub name: String,
    /// The name to put in [`ModelRequest::model`].
    pub upstream: String,
    pub provider: Arc<dyn Provider>,
}

impl ResolvedModel {
    /// An empty request for this model, its `model` already the upstream name.
    pub fn request(&self) -> ModelRequest {
        ModelRequest::new(self.upstream.clone())
    }

    /// Starts a call; shorthand for `self.provider.stream(request)`.
    pub fn stream(&self, request: &ModelRequest) -> ModelStream {
        self.provider.stream(request)
    }
}

/// What resolving one name yields: a provider, or why it cannot be used.
#[derive(Debug, Clone)]
enum Route {
    Ready(Arc<dyn Provider>),
    Broken(String),
}

/// Maps model names to providers; cheap to resolve (a map lookup and two
/// string copies), so the engine can resolve on every model step.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    models: HashMap<String, (Route, String)>,
    anthropic: Option<Route>,
    default: Option<Route>,
}

impl Registry {
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// From the process environment only.
    pub fn from_env() -> Result<Self> {
        Self::builder().build()
    }

    /// From the process environment and, if given, a rebyte.toml file.
    pub fn load(config_file: Option<PathBuf>) -> Result<Self> {
        let builder = Self::builder();
        match config_file {
            Some(path) => builder.config_file(path),
            None => builder,
        }
        .build()
    }

    /// Serves `model` with `provider` under the name `upstream`, before every
    /// other rule.
    pub fn insert(&mut self, model: impl Into<String>, provider: Arc<dyn Provider>, upstream: impl Into<String>) {
        self.models.insert(model.into(), (Route::Ready(provider), upstream.into()));
    }

    /// Which provider serves `model`, following the precedence above.
    pub fn resolve(&self, model: &str) -> Result<ResolvedModel> {
        let (route, upstream) = if let Some((route, upstream)) = self.models.get(model) {
            (route, upstream.as_str())
        } else if let Some(route) = self.anthropic.as_ref().filter(|_| model.starts_with("claude-")) {
            (route, model)
        } else if let Some(route) = &self.default {
            (route, model)
        } else {
            return Err(ModelError::UnknownModel { model: model.to_owned() });
        };
        match route {
            Route::Ready(provider) => {
                Ok(ResolvedModel { name: model.to_owned(), upstream: upstream.to_owned(), provider: provider.clone() })
            }
            Route::Broken(why) => Err(ModelError::Config { message: format!("model `{model}`: {why}") }),
        }
    }
}

type EnvLookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Builds a [`Registry`] from the environment and an optional rebyte.toml.
pub struct RegistryBuilder {
    env: EnvLookup,
    file: Option<PathBuf>,
    text: Option<String>,
    settings: ProviderSettings,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        Self {
            env: Box::new(|name| std::env::var(name).ok()),
            file: None,
            text: None,
            settings: ProviderSettings::default(),
        }
    }
}

impl std::fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryBuilder").field("file", &self.file).field("settings", &self.settings).finish()
    }
}

impl RegistryBuilder {
    /// Reads variables from exactly these pairs instead of the process
    /// environment (tests, and embedders with their own configuration).
    pub fn env_vars<K: Into<String>, V: Into<String>>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self {
        let vars: HashMap<String, String> = vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self.env = Box::new(move |name| vars.get(name).cloned());
        self
    }

    /// Reads rebyte.toml from this path at [`Self::build`].
    pub fn config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Uses this rebyte.toml text (instead of a file).
    pub fn config_toml(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Timeouts and retries every provider starts from (the file's
    /// `*_timeout_ms` and `max_retries` override them per provider).
    pub fn settings(mut self, settings: ProviderSettings) -> Self {
        self.settings = settings;
        self
    }

    pub fn build(self) -> Result<Registry> {
        let file = match (&self.text, &self.file) {
            (Some(text), _) => config::parse(text, "rebyte.toml")?,
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|error| ModelError::Config {
                    message: format!("cannot read {}: {error}", path.display()),
                })?;
                config::parse(&text, &path.display().to_string())?
            }
            (None, None) => FileConfig::default(),
        };
        Builder { env: &self.env, settings: self.settings, file: &file, instances: HashMap::new() }.build()
    }
}

/// One build: the file, and the provider instances made so far (models that
/// only name a provider share its instance, and so its connection pool).
struct Builder<'a> {
    env: &'a EnvLookup,
    settings: ProviderSettings,
    file: &'a FileConfig,
    instances: HashMap<String, Route>,
}

impl Builder<'_> {
    fn build(mut self) -> Result<Registry> {
        for (name, entry) in &self.file.providers {
            if entry.kind.is_none() && builtin_kind(name).is_none() {
                return Err(ModelError::Config {
                    message: format!(
                        "[providers.{name}] needs `kind = \"openai\"`, `kind = \"openai_responses\"` or `kind = \"anthropic\"`"
                    ),
                });
            }
        }
        let mut registry = Registry::default();
        let is_set = |name: &str| (self.env)(name).is_some_and(|v| !v.is_empty());
        if self.file.providers.contains_key("openai") || is_set("OPENAI_API_KEY") || is_set("OPENAI_BASE_URL") {
            registry.default = Some(self.shared("openai"));
        }
        if self.file.providers.contains_key("anthropic") || is_set("ANTHROPIC_API_KEY") {
            registry.anthropic = Some(self.shared("anthropic"));
        }
        for (model, entry) in &self.file.models {
            if builtin_kind(&entry.provider).is_none() && !self.file.providers.contains_key(&entry.provider) {
                return Err(ModelError::Config {
                    message: format!(
                        "[models.\"{model}\"] names provider `{}`, which is neither built in (openai, anthropic) \
                         nor defined as [providers.{}]",
                        entry.provider, entry.provider
                    ),
                });
            }
            let route = if entry.base_url.is_none() && entry.api_key_env.is_none() {
                self.shared(&entry.provider)
            } else {
                self.instantiate(&entry.provider, Some(entry))
            };
            registry.models.insert(model.clone(), (route, entry.upstream.clone().unwrap_or_else(|| model.clone())));
        }
        Ok(registry)
    }

    fn shared(&mut self, provider: &str) -> Route {
        if let Some(route) = self.instances.get(provider) {
            return route.clone();
        }
        let route = self.instantiate(provider, None);
        self.instances.insert(provider.to_owned(), route.clone());
        route
    }

    /// Makes one provider instance; `model` overrides the provider's settings.
    fn instantiate(&self, provider: &str, model: Option<&ModelEntry>) -> Route {
        let empty = ProviderEntry::default();
        let entry = self.file.providers.get(provider).unwrap_or(&empty);
        let Some(kind) = entry.kind.or(builtin_kind(provider)) else {
            return Route::Broken(format!("provider `{provider}` has no kind"));
        };
        let (url_var, key_var) = match builtin_kind(provider) {
            Some(ProviderKind::OpenAi) => (Some("OPENAI_BASE_URL"), Some("OPENAI_API_KEY")),
            Some(ProviderKind::Anthropic) => (Some("ANTHROPIC_BASE_URL"), Some("ANTHROPIC_API_KEY")),
            Some(ProviderKind::OpenAiResponses) | None => (None, None),
        };
        let base_url = model
            .and_then(|m| m.base_url.clone())
            .or_else(|| entry.base_url.clone())
            .or_else(|| url_var.and_then(|var| (self.env)(var)).filter(|v| !v.is_empty()))
            .unwrap_or_else(|| kind.default_base_url().to_owned());
        let explicit_key_var = model.and_then(|m| m.api_key_env.as_deref()).or(entry.api_key_env.as_deref());
        let api_key = match explicit_key_var {
            Some(var) => match (self.env)(var).filter(|v| !v.is_empty()) {
                Some(key) => Some(ApiKey::new(key)),
                None => {
                    return Route::Broken(format!(
                        "provider `{provider}` takes its API key from the environment variable {var}, which is not set"
                    ));
                }
            },
            None => key_var.and_then(|var| (self.env)(var)).filter(|v| !v.is_empty()).map(ApiKey::new),
        };
        let config =
            ProviderConfig { name: provider.to_owned(), base_url, api_key, settings: entry.apply(self.settings) };
        let made: Result<Arc<dyn Provider>> = match kind {
            ProviderKind::OpenAi => OpenAiChat::new(config).map(|p| Arc::new(p) as Arc<dyn Provider>),
            ProviderKind::Anthropic => Anthropic::new(config).map(|p| Arc::new(p) as Arc<dyn Provider>),
            ProviderKind::OpenAiResponses => OpenAiResponses::new(config).map(|p| Arc::new(p) as Arc<dyn Provider>),
        };
        match made {
            Ok(provider) => Route::Ready(provider),
            Err(error) => Route::Broken(error.to_string()),
        }
    }
}

fn builtin_kind(name: &str) -> Option<ProviderKind> {
    match name {
        "openai" => Some(ProviderKind::OpenAi),
        "anthropic" => Some(ProviderKind::Anthropic),
        _ => None,
    }
}
