//! Programs that cannot run or cannot answer: each ends `incomplete` with a clear message.

use super::{error, run};

#[tokio::test]
async fn a_syntax_error_names_its_line_and_column() {
    let outcome = run("const a = 1;\nconst b = ;\nreturn a;").await;
    let message = error(&outcome);
    assert!(message.starts_with("the program does not parse: SyntaxError:"), "{message}");
    assert!(message.ends_with("(line 2, column 11)"), "{message}");
    let outcome = run("return (;").await;
    assert!(error(&outcome).ends_with("(line 1, column 9)"), "{outcome:?}");
}

#[tokio::test]
async fn an_uncaught_error_names_its_position() {
    let outcome = run("\n\n  throw new TypeError('bad thing');").await;
    assert_eq!(error(&outcome), "the program threw TypeError: bad thing (line 3, column 13)");
}

#[tokio::test]
async fn thrown_values_that_are_not_errors() {
    assert_eq!(error(&run("throw 'plain';").await), "the program threw a value that is not an Error: \"plain\"");
    assert_eq!(error(&run("throw {code: 7};").await), "the program threw a value that is not an Error: {\"code\":7}");
    assert_eq!(error(&run("throw undefined;").await), "the program threw a value that is not an Error: undefined");
    assert_eq!(error(&run("throw 10n;").await), "the program threw a value that is not an Error: 10");
}

#[tokio::test]
async fn unserializable_return_values() {
    let message = error(&run("const a = {}; a.self = a; return a;").await);
    assert!(message.starts_with("the program threw TypeError: circular"), "{message}");
    let message = error(&run("return {big: 10n};").await);
    assert!(message.starts_with("the program threw TypeError"), "{message}");
    assert!(message.to_lowercase().contains("bigint"), "{message}");
}

#[tokio::test]
async fn a_promise_nothing_settles() {
    let message = error(&run("await new Promise(() => {});").await);
    assert!(message.starts_with("the program awaits a promise that nothing can settle"), "{message}");
}

#[tokio::test]
async fn bad_arguments_to_the_bridge_throw_inside_the_program() {
    let code = "try { await call_tool({n: 1n}); } catch (e) { return String(e); }";
    let outcome = run(code).await;
    assert!(outcome.value.as_deref().unwrap().to_lowercase().contains("bigint"), "{outcome:?}");
}

#[tokio::test]
async fn deeply_nested_source_is_refused_without_a_crash() {
    let code = format!("return {}1{};", "(".repeat(200_000), ")".repeat(200_000));
    let message = error(&run(&code).await);
    assert!(message.contains("stack"), "{message}");
}

#[tokio::test]
async fn a_program_may_overwrite_the_globals_it_was_given() {
    let outcome = run("globalThis.call_tool = 1; console = null; JSON.stringify = () => 'x'; return 5;").await;
    assert_eq!(outcome.value.as_deref(), Some("5"), "the host's serialization is its own: {outcome:?}");
}
