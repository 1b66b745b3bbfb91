//! The operations of the Responses and Conversations views over the same
//! turns (`resp_<uuid>`) and sessions (`conv_<uuid>`).

use super::op::{Op, of};
use super::{Doc, views};
use crate::routes::conversations::ItemsCreate;
use crate::routes::responses::ResponseCreate;
use protocol::conversation::{Conversation, ConversationCreate, ConversationDeleted, ConversationUpdate};
use schemars::SchemaGenerator;
use serde_json::{Value, json};

const RESPONSE: &str = "/v1/responses/{response_id}";
const CONVERSATION: &str = "/v1/conversations/{conversation_id}";

pub(super) fn add(doc: &mut Doc) {
    doc.tag("Responses", "A turn of a conversation, in the Responses API's shape.");
    doc.add(
        Op::post("/v1/responses", "createResponse", "Create a response")
            .idempotent()
            .about(
                "Runs a turn of `conversation` (a new one without it) and answers when it ends or waits for \
                 function results; `background: true` answers at once (`queued`); `stream: true` answers \
                 with the Responses event stream.",
            )
            .body(response_create)
            .json(views::response)
            .stream(views::response_stream_event)
            .errors(&[404]),
    );
    doc.add(
        Op::get(RESPONSE, "retrieveResponse", "Retrieve a response")
            .about(
                "The response as stored; with `stream=true`, its events from its start (those numbered after \
                 `starting_after`), followed live while it runs.",
            )
            .query("stream", json!({"type": "boolean"}), "Replay the response's event stream.")
            .query("starting_after", json!({"type": "integer", "minimum": 0}), "Replay after this sequence number.")
            .query("include", include(), "Refused by name: this server adds none of them.")
            .query("include_obfuscation", json!({"type": "boolean"}), "Accepted; changes nothing.")
            .json(views::response)
            .stream(views::response_stream_event),
    );
    doc.add(
        Op::post("/v1/responses/input_tokens", "countResponseInputTokens", "Count a response's input tokens")
            .about("Not supported by this server: answers 400 naming the feature.")
            .optional_body(|_| json!({"type": "object"}))
            .json(|_| json!({"type": "object", "properties": {"input_tokens": {"type": "integer"}}}))
            .errors(&[400]),
    );
    doc.add(
        Op::delete(RESPONSE, "deleteResponse", "Delete a response")
            .about("Deletes an ended response and its items from its conversation (409 while it runs).")
            .json(views::response_deleted)
            .errors(&[409]),
    );
    doc.add(
        Op::post("/v1/responses/{response_id}/cancel", "cancelResponse", "Cancel a response").json(views::response),
    );
    doc.add(
        Op::get("/v1/responses/{response_id}/input_items", "listResponseInputItems", "A response's input items")
            .list()
            .query("include", include(), "Refused by name: this server adds none of them.")
            .json(views::conversation_item_list),
    );

    doc.tag("Conversations", "A session in the Conversations API's shape.");
    doc.add(
        Op::post("/v1/conversations", "createConversation", "Create a conversation")
            .optional_body(of::<ConversationCreate>)
            .json(of::<Conversation>),
    );
    doc.add(Op::get(CONVERSATION, "retrieveConversation", "Retrieve a conversation").json(of::<Conversation>));
    doc.add(
        Op::post(CONVERSATION, "updateConversation", "Update a conversation's metadata")
            .body(of::<ConversationUpdate>)
            .json(of::<Conversation>),
    );
    doc.add(Op::delete(CONVERSATION, "deleteConversation", "Delete a conversation").json(of::<ConversationDeleted>));
    doc.add(
        Op::get("/v1/conversations/{conversation_id}/items", "listConversationItems", "List a conversation's items")
            .list()
            .query("include", include(), "Refused by name: this server adds none of them.")
            .json(views::conversation_item_list),
    );
    doc.add(
        Op::post("/v1/conversations/{conversation_id}/items", "createConversationItems", "Add items to a conversation")
            .body(of::<ItemsCreate>)
            .json(views::conversation_item_list),
    );
    const ITEM: &str = "/v1/conversations/{conversation_id}/items/{item_id}";
    doc.add(
        Op::get(ITEM, "retrieveConversationItem", "Retrieve a conversation's item")
            .query("include", include(), "Refused by name: this server adds none of them.")
            .json(views::conversation_item),
    );
    doc.add(
        Op::delete(ITEM, "deleteConversationItem", "Delete a conversation's item")
            .about("Removes the item from the conversation's history (409 while a response of it runs).")
            .json(of::<Conversation>)
            .errors(&[409]),
    );
}

fn include() -> serde_json::Value {
    json!({"type": "array", "items": {"type": "string"}})
}

/// `ResponseCreate`, with the `input` the handler requires (`app::responses::input`):
/// a non-empty string or a non-empty list of items. The type keeps it an
/// optional JSON value so that a missing one is a 400 naming `input`.
fn response_create(g: &mut SchemaGenerator) -> Value {
    let schema = of::<ResponseCreate>(g);
    if let Some(Value::Object(create)) = g.definitions_mut().get_mut("ResponseCreate") {
        create.insert("required".into(), json!(["input"]));
        let input = json!({"oneOf": [{"type": "string", "minLength": 1},
                                     {"type": "array", "minItems": 1, "items": {"type": "object"}}],
                           "description": "Text, or message items, or function_call_output items (not both)."});
        if let Some(Value::Object(properties)) = create.get_mut("properties") {
            properties.insert("input".into(), input);
        }
    }
    schema
}
