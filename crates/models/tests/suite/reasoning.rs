//! Reasoning through each wire format against the scripted server: it
//! streams as deltas, ends as one block before the answer, and goes back on
//! the next step where the wire format needs it (Anthropic's signed thinking,
//! the Responses API's encrypted content), never to another format.

use super::{KEY, anthropic, openai, responses};
use futures::StreamExt;
use models::{
    FinishReason, Message, ModelEvent, ModelRequest, ModelResponse, Provider, Reasoning, ReasoningEffort, ToolCall,
    ToolSpec, Usage,
};
use serde_json::{Value, json};
use test_support::model_server::{ModelServer, ScriptedToolCall, ScriptedUsage, Step};

/// Two steps of one turn: reasoning and a tool call, then reasoning and text.
async fn two_steps(provider: &dyn Provider, server: &ModelServer) -> (Vec<ModelEvent>, ModelResponse) {
    let mut request = ModelRequest::new("m").message(Message::user("what is in the dir?")).tool(ToolSpec::new(
        "ls",
        "list",
        json!({"type": "object"}),
    ));
    request.reasoning_effort = Some(ReasoningEffort::Medium);
    let mut stream = provider.stream(&request);
    let mut first = ModelResponse::default();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        first.apply(&event);
        events.push(event);
    }
    request.messages.extend(first.to_messages());
    request.messages.push(Message::tool_result(&first.tool_calls[0].id, "a.txt"));
    let second = ModelResponse::collect(provider.stream(&request)).await.unwrap();
    assert_eq!(server.requests().len(), 2);
    (events, second)
}

fn script() -> [Step; 2] {
    let usage = ScriptedUsage { input_tokens: 9, output_tokens: 7, cached_tokens: 0, reasoning_tokens: 5 };
    [
        Step::tool_calls([ScriptedToolCall::new("ls", json!({})).id("call_1")])
            .with_reasoning("I should list it.")
            .chunks(2)
            .usage(usage),
        Step::text("One file.").with_reasoning("It has one file."),
    ]
}

fn reasoning_deltas(events: &[ModelEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ReasoningDelta(delta) => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn chat_reasoning_content_streams_and_is_not_sent_back() {
    let server = ModelServer::with_script(script()).await.unwrap();
    let (events, second) = two_steps(&openai(&server), &server).await;
    assert_eq!(reasoning_deltas(&events).concat(), "I should list it.");
    let block = Reasoning::new(models::openai::REASONING_ORIGIN, "I should list it.");
    let at = events.iter().position(|event| *event == ModelEvent::Reasoning(block.clone())).unwrap();
    let call = events.iter().position(|event| matches!(event, ModelEvent::ToolCall(_))).unwrap();
    assert!(at < call, "the block ends before the call: {events:?}");
    assert!(events.contains(&ModelEvent::Usage(Usage {
        input_tokens: 9,
        output_tokens: 7,
        cached_tokens: 0,
        reasoning_tokens: 5
    })));
    assert_eq!(second.text, "One file.");
    assert_eq!(second.reasoning, vec![Reasoning::new(models::openai::REASONING_ORIGIN, "It has one file.")]);
    let sent = &server.requests()[1].body;
    assert_eq!(sent["reasoning_effort"], json!("medium"));
    let roles: Vec<&str> = sent["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    assert!(!sent.to_string().contains("I should list it"), "{sent}");
}

#[tokio::test]
async fn anthropic_thinking_goes_back_signed_before_the_tool_use() {
    let server = ModelServer::with_script(script()).await.unwrap();
    let (events, second) = two_steps(&anthropic(&server), &server).await;
    assert_eq!(reasoning_deltas(&events).concat(), "I should list it.");
    assert_eq!(second.text, "One file.");
    assert_eq!(second.reasoning[0].signature.as_deref(), Some("sig_scripted_2"));
    let request = &server.requests()[1];
    assert_eq!(request.headers["x-api-key"], KEY);
    let sent = &request.body;
    assert_eq!(sent["thinking"], json!({"type": "enabled", "budget_tokens": 4096}));
    assert_eq!(
        sent["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should list it.", "signature": "sig_scripted_1"},
            {"type": "tool_use", "id": "call_1", "name": "ls", "input": {}}
        ]})
    );
}

#[tokio::test]
async fn responses_reasoning_items_carry_their_encrypted_content_back_and_store_nothing() {
    let server = ModelServer::with_script(script()).await.unwrap();
    let (events, second) = two_steps(&responses(&server), &server).await;
    assert_eq!(reasoning_deltas(&events).concat(), "I should list it.");
    assert!(events.contains(&ModelEvent::ToolCall(ToolCall::new("call_1", "ls", "{}"))));
    assert_eq!(events.last(), Some(&ModelEvent::Finish(FinishReason::ToolCalls)));
    assert_eq!(second.text, "One file.");
    assert_eq!(second.finish, Some(FinishReason::Stop));
    let request = &server.requests()[1];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.headers["authorization"], format!("Bearer {KEY}"));
    let sent = &request.body;
    assert_eq!((&sent["store"], sent.get("previous_response_id")), (&json!(false), None));
    assert_eq!(sent["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(sent["reasoning"], json!({"effort": "medium"}));
    let input: Vec<&Value> = sent["input"].as_array().unwrap().iter().collect();
    assert_eq!(
        input[1],
        &json!({"type": "reasoning", "id": "rs_scripted_1",
                "summary": [{"type": "summary_text", "text": "I should list it."}],
                "encrypted_content": "enc_scripted_1"})
    );
    assert_eq!(input[2], &json!({"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"}));
    assert_eq!(input[3], &json!({"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}));
}
