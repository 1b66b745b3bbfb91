//! The resource helpers of a [`Toolset`]: `list_mcp_resources`, `list_mcp_resource_templates`
//! and `read_mcp_resource`, through the session's configured connections.

use super::{ListResourcesArgs, ReadResourceArgs, ServerBinding, Toolset, UnavailableServer, parse};
use crate::connection::CallContext;
use crate::error::{McpError, Result};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy)]
enum Listing {
    Resources,
    Templates,
}

impl Listing {
    fn field(self) -> &'static str {
        match self {
            Listing::Resources => "resources",
            Listing::Templates => "resourceTemplates",
        }
    }
}

impl Toolset {
    /// `list_mcp_resources` from the model's JSON arguments.
    pub async fn list_resources_json(&self, arguments: &str, cancel: &CancellationToken) -> Result<Value> {
        self.list_resources(&parse(arguments)?, cancel).await
    }

    /// `list_mcp_resource_templates` from the model's JSON arguments.
    pub async fn list_resource_templates_json(&self, arguments: &str, cancel: &CancellationToken) -> Result<Value> {
        self.list_resource_templates(&parse(arguments)?, cancel).await
    }

    /// `read_mcp_resource` from the model's JSON arguments.
    pub async fn read_resource_json(&self, arguments: &str, cancel: &CancellationToken) -> Result<Value> {
        self.read_resource(&parse(arguments)?, cancel).await
    }

    /// One server's page of resources, or every server's first page; each resource carries
    /// its `server`.
    pub async fn list_resources(&self, args: &ListResourcesArgs, cancel: &CancellationToken) -> Result<Value> {
        self.list(Listing::Resources, args, cancel).await
    }

    /// Like [`Toolset::list_resources`], for resource templates.
    pub async fn list_resource_templates(&self, args: &ListResourcesArgs, cancel: &CancellationToken) -> Result<Value> {
        self.list(Listing::Templates, args, cancel).await
    }

    /// `resources/read` of `uri` on `server`: `{server, contents}`.
    pub async fn read_resource(&self, args: &ReadResourceArgs, cancel: &CancellationToken) -> Result<Value> {
        let binding = self.binding(&args.server)?;
        let ctx = Self::context(binding, cancel);
        let mut answer = binding.connection.read_resource(&args.uri, &ctx).await?;
        if let Value::Object(object) = &mut answer {
            object.insert("server".into(), Value::String(args.server.clone()));
        }
        Ok(answer)
    }

    async fn list(&self, listing: Listing, args: &ListResourcesArgs, cancel: &CancellationToken) -> Result<Value> {
        let bindings: Vec<&ServerBinding> = match (&args.server, &args.cursor) {
            (Some(label), _) => vec![self.binding(label)?],
            (None, Some(_)) => return Err(McpError::InvalidRequest("a cursor needs the server it came from".into())),
            (None, None) => self.servers.iter().collect(),
        };
        let pages = futures::future::join_all(bindings.iter().map(|binding| {
            let ctx: CallContext = Self::context(binding, cancel);
            let cursor = args.cursor.clone();
            async move {
                match listing {
                    Listing::Resources => binding.connection.list_resources(cursor, &ctx).await,
                    Listing::Templates => binding.connection.list_resource_templates(cursor, &ctx).await,
                }
            }
        }))
        .await;
        let mut items = Vec::new();
        let mut next_cursors = Map::new();
        let mut unavailable = Vec::new();
        for (binding, page) in bindings.iter().zip(pages) {
            let label = &binding.config.label;
            let page = match page {
                Ok(page) => page,
                Err(error) if args.server.is_some() => return Err(error),
                Err(error) => {
                    unavailable.push(UnavailableServer { server: label.clone(), error: error.to_string() });
                    continue;
                }
            };
            // `resources/list` and `resources/templates/list` answers share one shape in rmcp.
            let found =
                page.get(listing.field()).or_else(|| page.get("resources")).or_else(|| page.get("resourceTemplates"));
            if let Some(Value::Array(found)) = found {
                for item in found {
                    let mut item = item.clone();
                    if let Value::Object(object) = &mut item {
                        object.insert("server".into(), Value::String(label.clone()));
                    }
                    items.push(item);
                }
            }
            if let Some(cursor) = page.get("nextCursor").filter(|cursor| !cursor.is_null()) {
                next_cursors.insert(label.clone(), cursor.clone());
            }
        }
        let mut answer = json!({ listing.field(): items });
        if !next_cursors.is_empty() {
            answer["nextCursors"] = Value::Object(next_cursors);
        }
        if !unavailable.is_empty() {
            answer["unavailable"] = serde_json::to_value(unavailable).unwrap_or(Value::Null);
        }
        Ok(answer)
    }
}
