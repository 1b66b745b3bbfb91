//! A step's reasoning as a `reasoning` output item: announced with its first
//! summary text, streamed as `reasoning_summary_text.delta`s, done when the
//! provider closes the block (keeping what the provider needs back on the
//! next step: a signature, encrypted content, its own id). A block that
//! arrives whole (redacted thinking) is added and done at once.

use crate::error::Result;
use crate::record::Recorder;
use protocol::event::EventBody;
use protocol::item::{Item, ItemStatus, ReasoningSource, SummaryText, new_item_id};

/// The reasoning item being streamed.
pub struct OpenReasoning {
    id: String,
    index: i64,
    text: String,
}

/// Streams a piece of reasoning text, opening the item with the first.
pub fn delta(rec: &mut Recorder, open: &mut Option<OpenReasoning>, delta: String) {
    let (session_id, turn_id) = (rec.session.id, rec.turn.id);
    let event = |item_id: &str, output_index, delta| EventBody::ReasoningSummaryTextDelta {
        session_id,
        turn_id,
        item_id: item_id.to_string(),
        output_index,
        summary_index: 0,
        delta,
    };
    if let Some(o) = open {
        o.text.push_str(&delta);
        rec.emit_now(vec![event(&o.id, o.index, delta)]);
        return;
    }
    let id = new_item_id();
    let item = item(rec, &id, ItemStatus::InProgress, Vec::new(), None);
    let text = delta.clone();
    let index = rec.add_item_now(item, |index| {
        let part = SummaryText { text: String::new() };
        let added = EventBody::ReasoningSummaryPartAdded {
            session_id,
            turn_id,
            item_id: id.clone(),
            output_index: index,
            summary_index: 0,
            part,
        };
        vec![added, event(&id, index, delta)]
    });
    *open = Some(OpenReasoning { id, index, text });
}

/// Ends the open item with the provider's whole block (or adds the block
/// whole when nothing of it streamed).
pub async fn block(rec: &mut Recorder, open: &mut Option<OpenReasoning>, r: &models::Reasoning) -> Result<()> {
    let o = match open.take() {
        Some(o) => o,
        None => {
            let id = new_item_id();
            let index = rec.add_item(item(rec, &id, ItemStatus::InProgress, Vec::new(), None)).await?;
            OpenReasoning { id, index, text: String::new() }
        }
    };
    let text = if r.text.is_empty() { o.text.clone() } else { r.text.clone() };
    let source = r.origin.as_ref().map(|format| ReasoningSource {
        format: format.clone(),
        upstream_id: r.id.clone(),
        redacted: r.redacted,
    });
    finish(rec, o, text, ItemStatus::Completed, r.signature.clone(), source).await
}

/// Ends a streamed item the step left unfinished (cancelled, failed).
pub async fn close_incomplete(rec: &mut Recorder, open: &mut Option<OpenReasoning>) -> Result<()> {
    let Some(o) = open.take() else { return Ok(()) };
    let text = o.text.clone();
    finish(rec, o, text, ItemStatus::Incomplete, None, None).await
}

async fn finish(
    rec: &mut Recorder,
    o: OpenReasoning,
    text: String,
    status: ItemStatus,
    encrypted_content: Option<String>,
    source: Option<ReasoningSource>,
) -> Result<()> {
    let summary = if text.is_empty() { Vec::new() } else { vec![SummaryText { text: text.clone() }] };
    let done = if summary.is_empty() { Vec::new() } else { summary_done(rec, &o.id, o.index, &text) };
    let mut item = item(rec, &o.id, status, summary, encrypted_content);
    if let Item::Reasoning { source: s, .. } = &mut item {
        *s = source;
    }
    rec.done_item(item, o.index, done).await
}

/// The end of a summary part: `reasoning_summary_text.done`, then `reasoning_summary_part.done`.
pub(crate) fn summary_done(rec: &Recorder, item_id: &str, output_index: i64, text: &str) -> Vec<EventBody> {
    let (session_id, turn_id) = (rec.session.id, rec.turn.id);
    let item_id = item_id.to_string();
    vec![
        EventBody::ReasoningSummaryTextDone {
            session_id,
            turn_id,
            item_id: item_id.clone(),
            output_index,
            summary_index: 0,
            text: text.to_string(),
        },
        EventBody::ReasoningSummaryPartDone {
            session_id,
            turn_id,
            item_id,
            output_index,
            summary_index: 0,
            part: SummaryText { text: text.to_string() },
        },
    ]
}

fn item(
    rec: &Recorder,
    id: &str,
    status: ItemStatus,
    summary: Vec<SummaryText>,
    encrypted_content: Option<String>,
) -> Item {
    Item::Reasoning { id: id.to_string(), turn_id: rec.turn.id, status, summary, encrypted_content, source: None }
}
