//! A program's failure in words for the model: a syntax error with its line and column, an
//! uncaught `Error` (name, message, position), a thrown value that is not an `Error`, and the
//! interpreter's own limits (memory, stack) named as limits.

use crate::interp::{FILE, PREFIX};
use crate::limits::Limits;
use rquickjs::{Ctx, Value};

/// `value` was thrown (or the promise rejected with it) while `doing` something.
pub(crate) fn thrown<'js>(ctx: &Ctx<'js>, value: Value<'js>, limits: &Limits, doing: &str) -> String {
    if let Some(error) = value.as_exception() {
        let message = error.message().unwrap_or_default();
        let name: String = error.get("name").unwrap_or_else(|_| "Error".into());
        if let Some(limit) = limit_reached(&name, &message, limits) {
            return limit;
        }
        let at = error.stack().as_deref().and_then(position).map(|(l, c)| format!(" (line {l}, column {c})"));
        let at = at.unwrap_or_default();
        if name == "SyntaxError" && doing == "starting the program" {
            return format!("the program does not parse: SyntaxError: {message}{at}");
        }
        return format!("the program threw {name}: {message}{at}");
    }
    if value.is_null() && ctx.has_exception() {
        return memory_message(limits);
    }
    format!("the program threw a value that is not an Error: {}", show(ctx, value))
}

/// A failure of the engine that is not a JavaScript exception.
pub(crate) fn engine_error(error: &rquickjs::Error, limits: &Limits, doing: &str) -> String {
    match error {
        rquickjs::Error::Allocation => memory_message(limits),
        other => format!("the program failed while {doing}: {other}"),
    }
}

fn memory_message(limits: &Limits) -> String {
    format!("the program reached its memory limit of {} MiB and was stopped", limits.memory_bytes / (1024 * 1024))
}

/// The limit an engine error stands for, if it stands for one.
fn limit_reached(name: &str, message: &str, limits: &Limits) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    if lower.contains("out of memory") {
        return Some(memory_message(limits));
    }
    if lower.contains("stack overflow") || lower.contains("maximum call stack size") {
        return Some(format!(
            "the program exceeded its stack limit of {} KiB (recursion too deep) and was stopped",
            limits.stack_bytes / 1024
        ));
    }
    if name == "InternalError" && lower.contains("interrupted") {
        return Some("the program was interrupted".into());
    }
    None
}

/// The first `program.js:LINE:COLUMN` of a stack, as the program's own position.
pub(crate) fn position(stack: &str) -> Option<(u32, u32)> {
    let at = stack.find(FILE)? + FILE.len();
    let rest = stack[at..].strip_prefix(':')?;
    let mut parts = rest.splitn(3, |c: char| !c.is_ascii_digit());
    let line: u32 = parts.next()?.parse().ok()?;
    let column: u32 = parts.next().and_then(|c| c.parse().ok()).unwrap_or(1);
    let column = if line == 1 { column.saturating_sub(PREFIX.len() as u32).max(1) } else { column };
    Some((line, column))
}

/// A thrown value as the model reads it: JSON when it has some, else its string form.
fn show<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> String {
    let kind = value.type_name();
    if let Ok(Some(json)) = ctx.json_stringify(value.clone())
        && let Ok(json) = json.to_string()
    {
        return json;
    }
    let _ = ctx.catch();
    match rquickjs::Coerced::<String>::from_js(ctx, value) {
        Ok(text) => text.0,
        Err(_) => {
            let _ = ctx.catch();
            format!("a value of type {kind}")
        }
    }
}

use rquickjs::FromJs;
