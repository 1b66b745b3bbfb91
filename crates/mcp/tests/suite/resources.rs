//! The resource helpers: list_mcp_resources, list_mcp_resource_templates and read_mcp_resource
//! through the configured connections.

use super::support::{cache, everything_stdio, everything_stdio_config, fixture, node, stdio_config};
use mcp::{ListResourcesArgs, McpError, ReadResourceArgs, Toolset};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn toolset() -> Toolset {
    Toolset::new("org", "s", cache())
        .with_server(stdio_config("everything", everything_stdio_config()), everything_stdio("everything").await)
        .with_server(stdio_config("fixture", node("fixture.mjs", &[])), fixture("fixture").await)
}

fn all() -> ListResourcesArgs {
    ListResourcesArgs::default()
}

#[tokio::test]
async fn list_resources_covers_every_server_and_labels_each_resource() {
    let toolset = toolset().await;
    let listed = toolset.list_resources(&all(), &CancellationToken::new()).await.unwrap();
    let resources = listed["resources"].as_array().unwrap();
    assert!(resources.iter().any(|r| r["server"] == json!("fixture") && r["uri"] == json!("fixture://readme")));
    assert!(resources.iter().any(|r| r["server"] == json!("everything")));
}

#[tokio::test]
async fn list_resources_pages_through_one_server_with_its_cursor() {
    let toolset = toolset().await;
    let first = ListResourcesArgs { server: Some("everything".into()), cursor: None };
    let page = toolset.list_resources(&first, &CancellationToken::new()).await.unwrap();
    assert!(page["resources"].as_array().is_some_and(|r| !r.is_empty()));
    if let Some(cursor) = page["nextCursors"]["everything"].as_str() {
        let next = ListResourcesArgs { server: Some("everything".into()), cursor: Some(cursor.to_owned()) };
        let page2 = toolset.list_resources(&next, &CancellationToken::new()).await.unwrap();
        assert_ne!(page2["resources"], page["resources"]);
    }
    let orphan = ListResourcesArgs { server: None, cursor: Some("x".into()) };
    assert!(matches!(
        toolset.list_resources(&orphan, &CancellationToken::new()).await,
        Err(McpError::InvalidRequest(_))
    ));
}

#[tokio::test]
async fn list_resource_templates_returns_server_everything_templates() {
    let toolset = toolset().await;
    let args = ListResourcesArgs { server: Some("everything".into()), cursor: None };
    let listed = toolset.list_resource_templates(&args, &CancellationToken::new()).await.unwrap();
    let templates = listed["resourceTemplates"].as_array().unwrap();
    assert!(!templates.is_empty(), "{listed}");
    assert!(templates.iter().all(|t| t["uriTemplate"].is_string() && t["server"] == json!("everything")), "{listed}");
}

#[tokio::test]
async fn read_resource_returns_its_contents() {
    let toolset = toolset().await;
    let args = ReadResourceArgs { server: "fixture".into(), uri: "fixture://readme".into() };
    let read = toolset.read_resource(&args, &CancellationToken::new()).await.unwrap();
    assert_eq!(read["server"], json!("fixture"));
    assert_eq!(read["contents"][0]["text"], json!("hello from the fixture"));

    // A resource server-everything lists can be read back through the model-facing JSON entry.
    let listed = toolset
        .list_resources(
            &ListResourcesArgs { server: Some("everything".into()), cursor: None },
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let uri = listed["resources"][0]["uri"].as_str().unwrap().to_owned();
    let arguments = json!({"server": "everything", "uri": uri}).to_string();
    let read = toolset.read_resource_json(&arguments, &CancellationToken::new()).await.unwrap();
    let contents = &read["contents"][0];
    assert_eq!(contents["uri"], json!(uri));
    assert!(contents["text"].is_string() || contents["blob"].is_string(), "{read}");
}

#[tokio::test]
async fn reading_from_an_unknown_server_is_an_error() {
    let toolset = toolset().await;
    let args = ReadResourceArgs { server: "elsewhere".into(), uri: "x://y".into() };
    let error = toolset.read_resource(&args, &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(error, McpError::UnknownServer { .. }));
}
