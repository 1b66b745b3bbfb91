//! The interpreter thread: one QuickJS runtime per run, with the limits set on it, the bridge
//! functions and `console` installed, the program evaluated as the body of an async function,
//! and a loop that runs the job queue and, while the program waits, drives the host's futures
//! for its nested calls and settles their promises with the answers, until the program's
//! promise settles or the run is stopped.

use crate::describe;
use crate::limits::{Limits, Stop};
use crate::output::{Log, Outcome, cut};
use crate::{Call, CallKind, Host};
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use rquickjs::context::EvalOptions;
use rquickjs::function::Opt;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Exception, Function, Persistent, Promise, Runtime, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// What the program is wrapped in. The prefix shares the program's first line, so line numbers
/// are the program's own; columns on line 1 are shifted by its length.
pub(crate) const PREFIX: &str = "(async () => {";
const SUFFIX: &str = "\n})()";
/// The file name positions in errors carry.
pub(crate) const FILE: &str = "program.js";

/// `console`, over the native `__rebyte_log`, which it hides.
const PRELUDE: &str = r#"(() => {
  const log = globalThis.__rebyte_log;
  delete globalThis.__rebyte_log;
  const show = (v) => {
    if (typeof v === "string") return v;
    if (v instanceof Error) return String(v);
    try { const s = JSON.stringify(v); if (s !== undefined) return s; } catch (_) {}
    try { return String(v); } catch (_) { return "[value]"; }
  };
  const write = (...args) => log(args.map(show).join(" "));
  globalThis.console = Object.freeze({ log: write, info: write, warn: write, error: write, debug: write });
})();"#;

type Resolvers = (Persistent<Function<'static>>, Persistent<Function<'static>>);

/// What answers the program's nested calls, and how their futures are driven.
pub(crate) struct Bridge {
    pub(crate) host: Arc<dyn Host>,
    /// The runtime whose I/O the host's futures use (this thread blocks on them with it).
    pub(crate) handle: tokio::runtime::Handle,
    /// Cancelled when the run stops: the host's futures and a wait for them end.
    pub(crate) cancel: CancellationToken,
}

/// A nested call's answer: the id of its promise, and the value or an error message.
type Answer = (u64, Result<serde_json::Value, String>);

/// What the bridge functions share with the loop.
struct State {
    /// The nested calls under way; `None` once the run stops taking calls.
    calls: Option<FuturesUnordered<BoxFuture<'static, Answer>>>,
    /// Nested calls made so far.
    made: usize,
    next: u64,
    pending: HashMap<u64, Resolvers>,
    log: Log,
}

/// Runs one program to its outcome.
pub(crate) fn run(code: &str, limits: Limits, stop: &Arc<AtomicU8>, bridge: Bridge) -> Outcome {
    let runtime = match Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return Outcome::incomplete(format!("the interpreter could not start: {e}"), String::new()),
    };
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let deadline = Instant::now() + limits.wall_clock;
    let flag = Arc::clone(stop);
    runtime.set_interrupt_handler(Some(Box::new(move || {
        if flag.load(Ordering::Relaxed) != 0 {
            return true;
        }
        if Instant::now() >= deadline {
            let _ = flag.compare_exchange(0, Stop::WallClock.code(), Ordering::SeqCst, Ordering::SeqCst);
            return true;
        }
        false
    })));
    let context = match Context::full(&runtime) {
        Ok(context) => context,
        Err(e) => return Outcome::incomplete(format!("the interpreter could not start: {e}"), String::new()),
    };
    let state = Rc::new(RefCell::new(State {
        calls: Some(FuturesUnordered::new()),
        made: 0,
        next: 0,
        pending: HashMap::new(),
        log: Log::new(limits.log_bytes),
    }));
    let run = Run { limits, stop, state: Rc::clone(&state), bridge: &bridge, deadline };
    let mut outcome = context.with(|ctx| run.program(&ctx, code));
    // Nothing may outlive the runtime: the resolvers of unanswered calls go first; the calls
    // still under way are cancelled and dropped.
    bridge.cancel.cancel();
    let mut state = state.borrow_mut();
    state.pending.clear();
    state.calls = None;
    outcome.log = state.log.take();
    outcome.nested_calls = state.made.min(limits.nested_calls);
    outcome
}

struct Run<'a> {
    limits: Limits,
    stop: &'a Arc<AtomicU8>,
    state: Rc<RefCell<State>>,
    bridge: &'a Bridge,
    deadline: Instant,
}

/// What ended a wait for answers.
enum Woke {
    Answer(Answer),
    Stop,
    Timeout,
}

impl Run<'_> {
    fn program<'js>(&self, ctx: &Ctx<'js>, code: &str) -> Outcome {
        if let Err(e) = self.install(ctx) {
            return self.failed(ctx, e, "setting up the program");
        }
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.backtrace_barrier = true;
        options.filename = Some(FILE.into());
        let source = format!("{PREFIX}{code}{SUFFIX}");
        let promise: Promise<'js> = match ctx.eval_with_options(source, options) {
            Ok(promise) => promise,
            Err(e) => return self.failed(ctx, e, "starting the program"),
        };
        loop {
            while ctx.execute_pending_job() {}
            match promise.state() {
                PromiseState::Resolved => return self.returned(ctx, &promise),
                PromiseState::Rejected => {
                    let e = match promise.result::<Value<'js>>() {
                        Some(Err(e)) => e,
                        _ => rquickjs::Error::Exception,
                    };
                    return self.failed(ctx, e, "running the program");
                }
                PromiseState::Pending => {}
            }
            if let Some(stop) = self.stopped() {
                return Outcome::incomplete(stop.message(&self.limits), String::new());
            }
            if self.state.borrow().pending.is_empty() {
                return Outcome::incomplete(
                    "the program awaits a promise that nothing can settle: there are no timers or events \
                     here, only search_tools and call_tool"
                        .into(),
                    String::new(),
                );
            }
            match self.wait() {
                Woke::Answer((id, answer)) => self.settle(ctx, id, answer.map(|value| value.to_string())),
                Woke::Stop => {
                    let stop = self.stopped().unwrap_or(Stop::Cancelled);
                    return Outcome::incomplete(stop.message(&self.limits), String::new());
                }
                Woke::Timeout => {
                    return Outcome::incomplete(Stop::WallClock.message(&self.limits), String::new());
                }
            }
        }
    }

    /// Blocks until a nested call answers, the run is cancelled, or the wall clock runs out.
    /// The bridge functions are not called meanwhile (no JavaScript runs), so the calls are
    /// taken out of the state for the wait.
    fn wait(&self) -> Woke {
        let Some(mut calls) = self.state.borrow_mut().calls.take() else { return Woke::Stop };
        let deadline = tokio::time::Instant::from_std(self.deadline);
        let cancel = &self.bridge.cancel;
        let woke = self.bridge.handle.block_on(async {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => Woke::Stop,
                answer = calls.next() => answer.map_or(Woke::Stop, Woke::Answer),
                _ = tokio::time::sleep_until(deadline) => Woke::Timeout,
            }
        });
        self.state.borrow_mut().calls = Some(calls);
        woke
    }

    fn stop_flag(&self) -> Arc<AtomicU8> {
        Arc::clone(self.stop)
    }

    fn stopped(&self) -> Option<Stop> {
        Stop::from_code(self.stop.load(Ordering::SeqCst))
    }

    /// Installs `console`, `search_tools` and `call_tool`.
    fn install<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<()> {
        let globals = ctx.globals();
        let state = Rc::clone(&self.state);
        let log = Function::new(ctx.clone(), move |line: rquickjs::Coerced<String>| {
            state.borrow_mut().log.line(&line.0);
        })?;
        globals.set("__rebyte_log", log)?;
        ctx.eval::<(), _>(PRELUDE)?;
        for kind in [CallKind::SearchTools, CallKind::CallTool] {
            globals.set(kind.name(), self.bridge(ctx, kind)?)?;
        }
        Ok(())
    }

    /// A bridge function: sends the call to the async side and answers a promise its reply
    /// settles.
    fn bridge<'js>(&self, ctx: &Ctx<'js>, kind: CallKind) -> rquickjs::Result<Function<'js>> {
        let state = Rc::clone(&self.state);
        let (host, cancel) = (Arc::clone(&self.bridge.host), self.bridge.cancel.clone());
        let (stop, limit) = (self.stop_flag(), self.limits.nested_calls);
        let function = Function::new(ctx.clone(), move |ctx: Ctx<'js>, argument: Opt<Value<'js>>| {
            let arguments = match argument.0 {
                Some(value) if !value.is_undefined() => match ctx.json_stringify(value)? {
                    Some(text) => text.to_string()?,
                    None => "{}".to_string(),
                },
                _ => "{}".to_string(),
            };
            let (promise, resolve, reject) = ctx.promise()?;
            let mut state = state.borrow_mut();
            let id = state.next;
            state.next += 1;
            state.made += 1;
            if state.made > limit {
                // Over the limit: the run stops (the interrupt handler reads the flag).
                let _ = stop.compare_exchange(0, Stop::NestedCalls.code(), Ordering::SeqCst, Ordering::SeqCst);
                cancel.cancel();
                state.calls = None;
            }
            if let Some(calls) = state.calls.as_mut() {
                let answer = host.call(Call { kind, arguments }, cancel.clone());
                calls.push(Box::pin(async move { (id, answer.await) }));
                state.pending.insert(id, (Persistent::save(&ctx, resolve), Persistent::save(&ctx, reject)));
            } else {
                drop(state);
                let error = Exception::from_message(ctx.clone(), "the program is stopping")?;
                reject.call::<_, ()>((error,))?;
            }
            rquickjs::Result::Ok(promise)
        })?;
        function.set_name(kind.name())?;
        Ok(function)
    }

    /// Settles the promise of call `id` with its answer.
    fn settle<'js>(&self, ctx: &Ctx<'js>, id: u64, answer: Result<String, String>) {
        let Some((resolve, reject)) = self.state.borrow_mut().pending.remove(&id) else { return };
        let settled = (|| -> rquickjs::Result<()> {
            match answer {
                Ok(json) => {
                    let value = ctx.json_parse(json)?;
                    resolve.restore(ctx)?.call::<_, ()>((value,))
                }
                Err(message) => {
                    let error = Exception::from_message(ctx.clone(), &message)?;
                    reject.restore(ctx)?.call::<_, ()>((error,))
                }
            }
        })();
        if settled.is_err() {
            // An out-of-memory or interrupted call leaves its exception pending; the
            // promise stays unsettled and the loop's checks end the run.
            let _ = ctx.catch();
        }
    }

    /// The program returned: its value as JSON, within the result limit.
    fn returned<'js>(&self, ctx: &Ctx<'js>, promise: &Promise<'js>) -> Outcome {
        let value = match promise.result::<Value<'js>>() {
            Some(Ok(value)) => value,
            Some(Err(e)) => return self.failed(ctx, e, "reading the return value"),
            None => return Outcome::incomplete("the program's result was lost".into(), String::new()),
        };
        let json = match ctx.json_stringify(value) {
            Ok(Some(text)) => match text.to_string() {
                Ok(text) => text,
                Err(e) => return self.failed(ctx, e, "serializing the return value"),
            },
            Ok(None) => "null".to_string(),
            Err(e) => return self.failed(ctx, e, "serializing the return value"),
        };
        let limit = self.limits.result_bytes;
        if json.len() > limit {
            return Outcome::incomplete(
                format!(
                    "the return value is {} bytes of JSON, over the output limit of {limit} bytes; its first \
                     {limit} bytes: {}",
                    json.len(),
                    cut(&json, limit)
                ),
                String::new(),
            );
        }
        Outcome::completed(json, String::new())
    }

    /// The run failed with `error` while `doing` something: why, in words.
    fn failed<'js>(&self, ctx: &Ctx<'js>, error: rquickjs::Error, doing: &str) -> Outcome {
        if let Some(stop) = self.stopped() {
            return Outcome::incomplete(stop.message(&self.limits), String::new());
        }
        let message = match error {
            rquickjs::Error::Exception => describe::thrown(ctx, ctx.catch(), &self.limits, doing),
            other => describe::engine_error(&other, &self.limits, doing),
        };
        Outcome::incomplete(message, String::new())
    }
}
