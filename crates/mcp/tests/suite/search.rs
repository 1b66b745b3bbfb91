//! `search_tools`: BM25 for `query`, case-insensitive regex for `pattern`, and every bad input
//! (both or neither, too long, invalid pattern, limit out of range, unknown server) rejected
//! with a clear message.

use super::support::{cache, fixture, node, stdio_config};
use mcp::{Catalog, McpError, SearchArgs, SearchLimits, ServerConfig, ToolInfo, Toolset, search};
use serde_json::{Map, Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn tool(name: &str, description: &str, params: &[&str]) -> ToolInfo {
    let properties: Map<String, Value> = params.iter().map(|p| ((*p).to_owned(), json!({"type": "string"}))).collect();
    let schema = json!({"type": "object", "properties": properties});
    ToolInfo::new(name, description, schema.as_object().unwrap().clone())
}

fn company() -> Catalog {
    Catalog::new(
        "company",
        vec![
            tool("list_orders", "List recent customer orders", &["customer_id"]),
            tool("get_inventory", "Warehouse stock level for a product", &["sku"]),
            tool("send_email", "Send an email to a customer about their order", &["to", "subject", "body"]),
            tool("restock", "Order more units from a supplier", &["sku", "quantity"]),
        ],
    )
}

fn names(catalogs: &[&Catalog], args: SearchArgs) -> Vec<String> {
    search(catalogs, &args.check().unwrap(), SearchLimits::default()).unwrap().into_iter().map(|hit| hit.name).collect()
}

fn rejected(args: SearchArgs) -> String {
    match args.check() {
        Err(McpError::InvalidSearch(message)) => message,
        other => panic!("expected InvalidSearch, got {other:?}"),
    }
}

#[test]
fn query_ranks_by_bm25_over_name_description_and_parameter_names() {
    let catalog = company();
    assert_eq!(names(&[&catalog], SearchArgs::query("warehouse stock")), ["get_inventory"]);
    // "sku" is only a parameter name; both tools taking it are found.
    let by_param = names(&[&catalog], SearchArgs::query("sku"));
    assert_eq!(by_param.len(), 2);
    assert!(by_param.contains(&"get_inventory".to_owned()) && by_param.contains(&"restock".to_owned()));
    // A word in the name outweighs the same word in a description.
    assert_eq!(names(&[&catalog], SearchArgs::query("orders"))[0], "list_orders");
    assert!(names(&[&catalog], SearchArgs::query("zebra")).is_empty());
}

#[test]
fn query_matches_camel_case_and_plural_forms() {
    let catalog =
        Catalog::new("c", vec![tool("getWeatherForecasts", "Upcoming weather", &[]), tool("other", "x", &[])]);
    assert_eq!(names(&[&catalog], SearchArgs::query("weather forecast")), ["getWeatherForecasts"]);
}

#[test]
fn results_carry_server_label_original_name_description_and_input_schema() {
    let catalog = company();
    let hits = search(&[&catalog], &SearchArgs::query("inventory").check().unwrap(), SearchLimits::default()).unwrap();
    assert_eq!(
        serde_json::to_value(&hits).unwrap(),
        json!([{
            "server": "company",
            "name": "get_inventory",
            "description": "Warehouse stock level for a product",
            "inputSchema": {"type": "object", "properties": {"sku": {"type": "string"}}}
        }])
    );
}

#[test]
fn pattern_is_a_case_insensitive_regex_with_name_matches_first() {
    let catalog = company();
    assert_eq!(names(&[&catalog], SearchArgs::pattern("^GET_")), ["get_inventory"]);
    // "order" is in two names and in one description: names first, then the description match.
    assert_eq!(names(&[&catalog], SearchArgs::pattern("order")), ["list_orders", "send_email", "restock"]);
    assert_eq!(names(&[&catalog], SearchArgs::pattern("customer_id")), ["list_orders"]);
}

#[test]
fn limit_defaults_to_5_and_caps_results() {
    let many = Catalog::new("m", (0..30).map(|i| tool(&format!("tool_{i}"), "does things", &[])).collect());
    assert_eq!(names(&[&many], SearchArgs::query("things")).len(), 5);
    assert_eq!(names(&[&many], SearchArgs::query("things").with_limit(20)).len(), 20);
    assert_eq!(names(&[&many], SearchArgs::pattern("tool").with_limit(1)), ["tool_0"]);
}

#[test]
fn search_spans_catalogs_with_comparable_scores() {
    let a =
        Catalog::new("a", vec![tool("unrelated", "nothing here", &[]), tool("billing_report", "monthly billing", &[])]);
    let b = Catalog::new("b", vec![tool("billing", "billing billing", &[])]);
    let hits = search(&[&a, &b], &SearchArgs::query("billing").check().unwrap(), SearchLimits::default()).unwrap();
    let found: Vec<(&str, &str)> = hits.iter().map(|h| (h.server.as_str(), h.name.as_str())).collect();
    assert_eq!(found, [("b", "billing"), ("a", "billing_report")]);
}

#[test]
fn exactly_one_of_query_and_pattern_is_required() {
    let both = SearchArgs { query: Some("a".into()), pattern: Some("b".into()), ..SearchArgs::default() };
    assert_eq!(rejected(both), "give exactly one of query and pattern, not both");
    assert_eq!(rejected(SearchArgs::default()), "give exactly one of query and pattern");
}

#[test]
fn over_long_query_and_pattern_are_rejected() {
    assert_eq!(rejected(SearchArgs::query("q".repeat(501))), "query is 501 characters; the limit is 500");
    assert!(SearchArgs::query("é".repeat(500)).check().is_ok(), "the limit counts characters, not bytes");
    assert_eq!(rejected(SearchArgs::pattern("p".repeat(201))), "pattern is 201 characters; the limit is 200");
}

#[test]
fn invalid_patterns_are_rejected_with_the_reason() {
    let message = rejected(SearchArgs::pattern("(unclosed"));
    assert!(message.starts_with("invalid pattern"), "{message}");
    // Lookaround (JavaScript has it, linear-time regex does not) is reported, not crashed on.
    let message = rejected(SearchArgs::pattern("foo(?=bar)"));
    assert!(message.contains("look-around") || message.contains("lookaround"), "{message}");
    // A short pattern that would compile to a huge automaton hits the size limit.
    let message = rejected(SearchArgs::pattern("(\\w{100}){100}"));
    assert!(message.contains("invalid pattern"), "{message}");
}

#[test]
fn limit_outside_1_to_20_is_rejected() {
    assert_eq!(rejected(SearchArgs::query("x").with_limit(0)), "limit is 0; it must be between 1 and 20");
    assert_eq!(rejected(SearchArgs::query("x").with_limit(50)), "limit is 50; it must be between 1 and 20");
    assert_eq!(rejected(SearchArgs::query("x").with_limit(-3)), "limit is -3; it must be between 1 and 20");
    assert!(SearchArgs::query("x").with_limit(20).check().is_ok());
}

#[test]
fn empty_query_is_rejected() {
    assert_eq!(rejected(SearchArgs::query("   ")), "query is empty");
}

#[test]
fn pattern_search_honours_its_deadline() {
    let big = Catalog::new("big", (0..5_000).map(|i| tool(&format!("tool_{i}"), "some description", &[])).collect());
    let limits = SearchLimits { pattern_deadline: Duration::ZERO };
    let error = search(&[&big], &SearchArgs::pattern("nomatch").check().unwrap(), limits).unwrap_err();
    assert_eq!(error, McpError::SearchDeadline(Duration::ZERO));
    assert_eq!(error.to_string(), "search_tools pattern search exceeded its 0 ms deadline");
}

#[test]
fn search_arguments_from_the_model_reject_unknown_fields() {
    let parsed: Result<SearchArgs, _> = serde_json::from_str(r#"{"query":"x","serverr":"a"}"#);
    assert!(parsed.is_err());
    let parsed: SearchArgs =
        serde_json::from_str(r#"{"query":"warehouse stock","server":"company","limit":5}"#).unwrap();
    assert_eq!(parsed, SearchArgs::query("warehouse stock").on_server("company").with_limit(5));
}

#[tokio::test]
async fn an_unknown_server_label_is_an_error_naming_the_known_ones() {
    let connection = fixture("fixture").await;
    let toolset =
        Toolset::new("org", "s", cache()).with_server(stdio_config("fixture", node("fixture.mjs", &[])), connection);
    let error = toolset
        .search_tools(&SearchArgs::query("echo").on_server("nope"), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error, McpError::UnknownServer { server: "nope".into(), known: vec!["fixture".into()] });
    assert_eq!(error.to_string(), "unknown MCP server 'nope'; configured servers: fixture");
}

#[tokio::test]
async fn allowed_tools_limits_what_search_finds() {
    let connection = fixture("fixture").await;
    let mut config: ServerConfig = stdio_config("fixture", node("fixture.mjs", &[]));
    config.allowed_tools = Some(vec!["echo".into(), "get_inventory".into()]);
    let toolset = Toolset::new("org", "s", cache()).with_server(config, connection);
    let found =
        toolset.search_tools(&SearchArgs::pattern(".").with_limit(20), &CancellationToken::new()).await.unwrap();
    let mut names: Vec<&str> = found.results.iter().map(|hit| hit.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["echo", "get_inventory"]);
}

#[tokio::test]
async fn search_from_model_json_finds_server_everything_tools() {
    let connection = super::support::everything_stdio("everything").await;
    let config = stdio_config("everything", super::support::everything_stdio_config());
    let toolset = Toolset::new("org", "s", cache()).with_server(config, connection);
    let found =
        toolset.search_tools_json(r#"{"query":"add two numbers","limit":3}"#, &CancellationToken::new()).await.unwrap();
    assert_eq!(found.results[0].name, "get-sum", "{found:?}");
    assert!(found.unavailable.is_empty());
}

#[test]
fn a_pattern_never_matches_across_two_tools() {
    let catalog = Catalog::new("c", vec![tool("xa", "", &[]), tool("bx", "", &[]), tool("ab", "", &[])]);
    // `\s` matches the separator between tools in the joined scan; the answer must be per tool.
    assert_eq!(names(&[&catalog], SearchArgs::pattern("a\\s*b")), ["ab"]);
    assert_eq!(names(&[&catalog], SearchArgs::pattern("a$")), ["xa"]);
    assert_eq!(names(&[&catalog], SearchArgs::pattern("^b")), ["bx"]);
    assert_eq!(names(&[&catalog], SearchArgs::pattern("\\Ab")), ["bx"]);
    assert_eq!(names(&[&catalog], SearchArgs::pattern("x\\z")), ["bx"]);
}
