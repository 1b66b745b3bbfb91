// The rebyte console: one ES module, no build step, no dependencies.
//
// Every call is the public API with the key the user signed in with. The key
// lives in this tab's sessionStorage only: never in a URL, a cookie or a log.
// Everything the server returns (model output, tool output, errors) is shown
// with textContent, never parsed as HTML.

const KEY = "rebyte.key";
const PAGE = 20;

const $ = (id) => document.getElementById(id);

/** An element with a class and text (as text, never markup). */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** An API error, shown as "403 permission_error: …". */
class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(`${status} ${error.type || "error"}: ${error.message || "the server answered " + status}`);
    this.status = status;
  }
}

function key() {
  return sessionStorage.getItem(KEY);
}

/** Calls the API with the signed-in key; the parsed JSON, or an ApiError. */
async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${key()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await resp.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!resp.ok) throw new ApiError(resp.status, json);
  return json;
}

function showError(err) {
  const area = $("error");
  area.textContent = err instanceof Error ? err.message : String(err);
  area.hidden = false;
}

function clearError() {
  $("error").textContent = "";
  $("error").hidden = true;
}

// ---- sign-in ----

function showSignedIn(signedIn) {
  $("signin").hidden = signedIn;
  $("console").hidden = !signedIn;
  $("signout").hidden = !signedIn;
}

async function signIn(event) {
  event.preventDefault();
  clearError();
  const value = $("key").value.trim();
  if (!value) return;
  sessionStorage.setItem(KEY, value);
  try {
    await loadSessions(true);
    $("key").value = "";
    showSignedIn(true);
  } catch (err) {
    sessionStorage.removeItem(KEY);
    showError(err);
  }
}

function signOut() {
  closeSession();
  closeEnvironment();
  $("environments").replaceChildren();
  $("tab-sessions").classList.add("selected");
  $("tab-environments").classList.remove("selected");
  $("sessions-pane").hidden = false;
  $("environments-pane").hidden = true;
  sessionStorage.removeItem(KEY);
  $("sessions").replaceChildren();
  showSignedIn(false);
}

// ---- sessions ----

let selected = null;

/** A newest-first list of one resource, paged with `after` and a More button. */
function pager(path, listId, moreId, row) {
  let last = null;
  return async function load(fresh) {
    const query = new URLSearchParams({ limit: String(PAGE), order: "desc" });
    if (!fresh && last) query.set("after", last);
    const page = await api("GET", `${path}?${query}`);
    if (fresh) $(listId).replaceChildren();
    for (const item of page.data) $(listId).append(row(item));
    last = fresh ? page.last_id : page.last_id || last;
    $(moreId).hidden = !page.has_more;
  };
}

const loadSessions = pager("/v1/agents/sessions", "sessions", "more", (session) => sessionRow(session));

function sessionRow(session) {
  const li = el("li");
  const button = el("button", session.id === (selected && selected.id) ? "selected" : "");
  button.type = "button";
  button.dataset.sessionId = session.id;
  button.append(el("span", "id", session.id), document.createTextNode(" "));
  const status = el("span", "status", session.status);
  status.dataset.status = session.status;
  button.append(status, el("div", "note", new Date(session.created_at * 1000).toLocaleString()));
  button.addEventListener("click", () => openSession(session.id).catch(showError));
  li.append(button);
  return li;
}

function setSessionStatus(status) {
  $("session-status").textContent = status;
  $("session-status").dataset.status = status;
  const row = document.querySelector(`#sessions button[data-session-id="${CSS.escape(selected.id)}"] .status`);
  if (row) {
    row.textContent = status;
    row.dataset.status = status;
  }
}

// ---- one session: turns, items, live events ----

function closeSession() {
  if (selected) selected.controller.abort();
  selected = null;
  disarmDelete();
  $("session").hidden = true;
  $("turns").replaceChildren();
}

async function openSession(id) {
  clearError();
  closeSession();
  closeEnvironment();
  const session = { id, controller: new AbortController(), lastEventId: null, loaded: false, buffer: [], connected: false };
  selected = session;
  for (const b of document.querySelectorAll("#sessions button")) {
    b.classList.toggle("selected", b.dataset.sessionId === id);
  }
  $("session-title").textContent = id;
  $("session").hidden = false;
  // Subscribe first, then read the history: nothing between the two is lost
  // (events that arrive meanwhile wait in the buffer).
  await stream(session);
  await loadHistory(session);
}

/** Reads the session, its turns and items, then applies the events buffered meanwhile. */
async function loadHistory(session) {
  session.loaded = false;
  const base = `/v1/agents/sessions/${encodeURIComponent(session.id)}`;
  try {
    const [info, turns, items] = await Promise.all([
      api("GET", base),
      api("GET", `${base}/turns?order=asc&limit=100`),
      api("GET", `${base}/items?order=asc&limit=100`),
    ]);
    if (selected !== session) return;
    setSessionStatus(info.status);
    for (const turn of turns.data) renderTurn(turn);
    for (const item of items.data) renderItem(item.turn_id, item);
  } finally {
    session.loaded = true;
    for (const event of session.buffer.splice(0)) apply(session, event, true);
  }
}

/**
 * Reads the session's event stream with fetch (EventSource cannot send the
 * Authorization header), reconnecting with Last-Event-ID after a drop. The
 * returned promise settles once the first connection is open.
 */
function stream(session) {
  let ready;
  const opened = new Promise((resolve) => (ready = resolve));
  (async () => {
    let delay = 500;
    while (selected === session) {
      try {
        const headers = { Authorization: `Bearer ${key()}` };
        if (session.lastEventId) headers["Last-Event-ID"] = session.lastEventId;
        const resp = await fetch(`/v1/agents/sessions/${encodeURIComponent(session.id)}/events`, {
          headers,
          signal: session.controller.signal,
        });
        if (!resp.ok) {
          const body = await resp.json().catch(() => null);
          throw new ApiError(resp.status, body);
        }
        $("stream-status").textContent = "live";
        // Back after a drop without an event id to resume from: what happened
        // meanwhile is read from the stored history instead.
        if (session.connected && !session.lastEventId) loadHistory(session).catch(showError);
        session.connected = true;
        ready();
        delay = 500;
        await readFrames(resp.body, (frame) => onFrame(session, frame));
      } catch (err) {
        if (session.controller.signal.aborted) break;
        if (err instanceof ApiError && err.status >= 400 && err.status < 500) {
          showError(err);
          ready();
          break;
        }
      }
      if (selected !== session) break;
      ready();
      $("stream-status").textContent = "reconnecting…";
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 5000);
    }
  })();
  return opened;
}

/** Splits a text/event-stream body into frames of {id, event, data}. */
async function readFrames(body, onFrameRead) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame = { id: null, event: null, data: [] };
      for (const line of raw.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") frame.id = val;
        else if (field === "event") frame.event = val;
        else if (field === "data") frame.data.push(val);
      }
      if (frame.data.length) onFrameRead(frame);
    }
  }
}

function onFrame(session, frame) {
  if (selected !== session) return;
  if (frame.id) session.lastEventId = frame.id;
  const data = frame.data.join("\n");
  if (data === "[DONE]") return;
  let event;
  try {
    event = JSON.parse(data);
  } catch {
    return;
  }
  if (!session.loaded) session.buffer.push(event);
  else apply(session, event, false);
}

/** Applies one event to the view; `replayed` events may repeat loaded state. */
function apply(session, event, replayed) {
  const type = event.type || "";
  if (event.session && event.session.status && type.startsWith("agent.session.") && !type.includes(".turn.")) {
    setSessionStatus(event.session.status);
    // A turn that waits for a client's result says so on the session, not in
    // an event of its own: read those turns again.
    const waiting = new Set((event.session.required_actions || []).map((a) => a.turn_id).filter(Boolean));
    for (const turnId of waiting) refreshTurn(session, turnId);
  }
  if (event.turn && type.startsWith("agent.session.turn.")) renderTurn(event.turn);
  switch (type) {
    case "agent.session.turn.item.added":
    case "agent.session.turn.item.done":
      renderItem(event.turn_id, event.item);
      break;
    case "agent.session.turn.output_text.delta": {
      const node = itemNode(event.turn_id, event.item_id, "message");
      node.dataset.role = node.dataset.role || "assistant";
      if (replayed && node.dataset.status === "completed") break;
      textOf(node, "text").append(document.createTextNode(event.delta));
      break;
    }
    case "agent.output.command_execution_output.delta": {
      const node = itemNode(event.turn_id, event.item_id, "command_execution");
      if (replayed && node.dataset.status === "completed") break;
      textOf(node, "output").append(document.createTextNode(event.delta));
      break;
    }
    case "error":
      showError(`${event.error.type}: ${event.error.message}`);
      break;
    default:
      break;
  }
}

async function refreshTurn(session, turnId) {
  try {
    const path = `/v1/agents/sessions/${encodeURIComponent(session.id)}/turns/${encodeURIComponent(turnId)}`;
    const before = turnNode(turnId).dataset.status;
    const turn = await api("GET", path);
    // An event that came meanwhile is newer than this answer.
    if (selected === session && turnNode(turnId).dataset.status === before) renderTurn(turn);
  } catch (err) {
    showError(err);
  }
}

function turnNode(turnId) {
  let node = document.querySelector(`#turns .turn[data-turn-id="${CSS.escape(turnId)}"]`);
  if (!node) {
    node = el("div", "turn");
    node.dataset.turnId = turnId;
    const head = el("div", "bar");
    head.append(el("span", "label", turnId), el("span", "status turn-status"));
    node.append(head, el("p", "turn-error"), el("div", "items"));
    $("turns").append(node);
  }
  return node;
}

function renderTurn(turn) {
  const node = turnNode(turn.id);
  const status = node.querySelector(".turn-status");
  status.textContent = turn.status;
  status.dataset.status = turn.status;
  node.dataset.status = turn.status;
  const error = node.querySelector(".turn-error");
  error.textContent = turn.error ? `${turn.error.code || "error"}: ${turn.error.message}` : "";
  error.hidden = !turn.error;
}

function itemNode(turnId, itemId, type) {
  let node = document.querySelector(`#turns .item[data-item-id="${CSS.escape(itemId)}"]`);
  if (!node) {
    node = el("div", "item");
    node.dataset.itemId = itemId;
    node.dataset.type = type;
    turnNode(turnId).querySelector(".items").append(node);
  }
  return node;
}

/** The <pre> of class `name` inside an item, made if missing. */
function textOf(node, name) {
  let pre = node.querySelector(`pre.${name}`);
  if (!pre) {
    pre = el("pre", name);
    node.append(pre);
  }
  return pre;
}

const json = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

/** Renders an item whole (replacing what deltas built), as text. */
function renderItem(turnId, item) {
  const node = itemNode(turnId, item.id, item.type);
  node.dataset.type = item.type;
  node.dataset.status = item.status || "";
  if (item.role) node.dataset.role = item.role;
  const parts = [];
  const label = (text) => parts.push(el("div", "label", text));
  const pre = (name, text) => parts.push(el("pre", name, text));
  switch (item.type) {
    case "message":
      label(`${item.role}${item.status && item.status !== "completed" ? ` (${item.status})` : ""}`);
      pre("text", (item.content || []).map((c) => c.text || (c.image_url ? `[image ${c.image_url}]` : "")).join(""));
      break;
    case "command_execution":
      label(`command_execution (${item.status}${item.exit_code != null ? `, exit ${item.exit_code}` : ""})`);
      pre("command", `$ ${item.command}`);
      pre("output", item.output || "");
      break;
    case "mcp_call":
      label(`mcp_call ${item.server_label}.${item.name} (${item.status})`);
      pre("arguments", json(item.arguments));
      if (item.output != null) pre("output", json(item.output));
      if (item.error != null) pre("error", json(item.error));
      break;
    case "function_call": {
      const waiting = item.status === "in_progress" ? ", waiting for the client's result" : "";
      label(`function_call ${item.name} (${item.status}${waiting}) call_id ${item.call_id}`);
      pre("arguments", json(item.arguments));
      if (waiting) parts.push(resultForm(item.turn_id || turnId, item.call_id));
      break;
    }
    case "function_call_output":
      label(`function_call_output ${item.call_id} (${item.status})`);
      if (item.output != null) pre("output", json(item.output));
      if (item.error != null) pre("error", item.error);
      break;
    case "reasoning":
      label("reasoning");
      pre("text", (item.summary || []).map((s) => s.text).join("\n"));
      break;
    default:
      label(item.type);
      pre("output", json(item));
  }
  node.replaceChildren(...parts);
}

/** A text box and "Send result" answering a client function call the turn waits for. */
function resultForm(turnId, callId) {
  const form = el("form", "tool-result");
  const input = el("input");
  input.type = "text";
  input.name = "output";
  input.placeholder = "The function's result";
  const button = el("button", "", "Send result");
  button.type = "submit";
  form.append(input, button);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!selected) return;
    clearError();
    button.disabled = true;
    try {
      await api("POST", `/v1/agents/sessions/${encodeURIComponent(selected.id)}/events`, {
        events: [{ type: "agent.session.input.tool_result", turn_id: turnId, call_id: callId, success: true, output: input.value }],
      });
    } catch (err) {
      button.disabled = false;
      showError(err);
    }
  });
  return form;
}

// ---- input ----

async function send(event) {
  event.preventDefault();
  if (!selected) return;
  clearError();
  const text = $("message").value;
  try {
    await api("POST", `/v1/agents/sessions/${encodeURIComponent(selected.id)}/events`, {
      events: [
        { type: "agent.session.input.message", input: [{ role: "user", content: [{ type: "input_text", text }] }] },
      ],
    });
    $("message").value = "";
  } catch (err) {
    showError(err);
  }
}

async function cancel() {
  if (!selected) return;
  clearError();
  try {
    await api("POST", `/v1/agents/sessions/${encodeURIComponent(selected.id)}/events`, {
      events: [{ type: "agent.session.input.cancel" }],
    });
  } catch (err) {
    showError(err);
  }
}

/**
 * Deletes the open session: the first click asks (the button turns into
 * "Confirm delete" for a few seconds), the second deletes it.
 */
async function deleteSession() {
  if (!selected) return;
  const button = $("delete");
  if (button.dataset.armed !== "true") {
    button.dataset.armed = "true";
    button.textContent = "Confirm delete";
    const session = selected;
    setTimeout(() => {
      if (selected === session) disarmDelete();
    }, 5000);
    return;
  }
  clearError();
  const id = selected.id;
  disarmDelete();
  try {
    await api("DELETE", `/v1/agents/sessions/${encodeURIComponent(id)}`);
    closeSession();
    await loadSessions(true);
  } catch (err) {
    showError(err);
  }
}

function disarmDelete() {
  const button = $("delete");
  button.dataset.armed = "false";
  button.textContent = "Delete";
}

// ---- environments ----

let selectedEnvironment = null;
const SETTING_UP = new Set(["pending", "initializing"]);

function showTab(name) {
  const environments = name === "environments";
  $("tab-sessions").classList.toggle("selected", !environments);
  $("tab-environments").classList.toggle("selected", environments);
  $("sessions-pane").hidden = environments;
  $("environments-pane").hidden = !environments;
  if (environments) {
    closeSession();
    return loadEnvironments(true);
  }
  closeEnvironment();
  return loadSessions(true);
}

const loadEnvironments = pager("/v1/agents/environments", "environments", "more-environments", (environment) =>
  environmentRow(environment),
);

function environmentRow(environment) {
  const li = el("li");
  const button = el("button", environment.id === selectedEnvironment ? "selected" : "");
  button.type = "button";
  button.dataset.environmentId = environment.id;
  button.append(el("span", "id", environment.id), document.createTextNode(" "));
  const status = el("span", "status", environment.status);
  status.dataset.status = environment.status;
  button.append(status, el("div", "note", new Date(environment.created_at * 1000).toLocaleString()));
  button.addEventListener("click", () => openEnvironment(environment.id).catch(showError));
  li.append(button);
  return li;
}

function closeEnvironment() {
  selectedEnvironment = null;
  $("environment").hidden = true;
}

async function openEnvironment(id) {
  clearError();
  closeSession();
  selectedEnvironment = id;
  for (const b of document.querySelectorAll("#environments button")) {
    b.classList.toggle("selected", b.dataset.environmentId === id);
  }
  $("environment-title").textContent = id;
  $("environment-log").textContent = "";
  $("environment-setup").textContent = "";
  $("environment-files").replaceChildren();
  $("environment-files-note").textContent = "listed once setup is done";
  $("environment").hidden = false;
  // Read again every second while setup may still run, so the log grows on screen.
  for (;;) {
    const environment = await api("GET", `/v1/agents/environments/${encodeURIComponent(id)}`);
    if (selectedEnvironment !== id) return;
    renderEnvironment(environment);
    if (!SETTING_UP.has(environment.status)) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (selectedEnvironment !== id) return;
  }
  if (selectedEnvironment !== id) return;
  if ($("environment-status").dataset.status === "failed") $("environment-files-note").textContent = "setup failed: no files";
  else await loadEnvironmentFiles(id);
}

function renderEnvironment(environment) {
  $("environment-status").textContent = environment.status;
  $("environment-status").dataset.status = environment.status;
  const row = document.querySelector(`#environments button[data-environment-id="${CSS.escape(environment.id)}"] .status`);
  if (row) {
    row.textContent = environment.status;
    row.dataset.status = environment.status;
  }
  const setup = environment.setup;
  let progress = "setup has not started (it runs at first use)";
  if (setup) {
    progress = `setup ${setup.state}: ${setup.steps_completed} of ${setup.steps_total} steps`;
    if (setup.step) progress += `, ${setup.step}${setup.command ? ` (${setup.command})` : ""}`;
  }
  $("environment-setup").textContent = progress;
  const log = $("environment-log");
  const text = environment.setup_log || "";
  if (log.textContent !== text) log.textContent = text;
  const error = environment.error;
  $("environment-error").textContent = error ? `${error.code}: ${error.message}${error.step ? ` (${error.step})` : ""}` : "";
  $("environment-error").hidden = !error;
}

async function loadEnvironmentFiles(id) {
  const page = await api("GET", `/v1/agents/environments/${encodeURIComponent(id)}/files?limit=100`);
  if (selectedEnvironment !== id) return;
  const list = $("environment-files");
  list.replaceChildren(...page.data.map((file) => el("li", "file", `${file.path} (${file.size_bytes} bytes)`)));
  $("environment-files-note").textContent = page.data.length ? "" : "no files";
}

// ---- start ----

function start() {
  $("signin").addEventListener("submit", signIn);
  $("signout").addEventListener("click", signOut);
  $("refresh").addEventListener("click", () => loadSessions(true).catch(showError));
  $("more").addEventListener("click", () => loadSessions(false).catch(showError));
  $("send").addEventListener("submit", send);
  $("cancel").addEventListener("click", cancel);
  $("delete").addEventListener("click", deleteSession);
  $("tab-sessions").addEventListener("click", () => showTab("sessions").catch(showError));
  $("tab-environments").addEventListener("click", () => showTab("environments").catch(showError));
  $("refresh-environments").addEventListener("click", () => loadEnvironments(true).catch(showError));
  $("more-environments").addEventListener("click", () => loadEnvironments(false).catch(showError));
  if (key()) {
    showSignedIn(true);
    loadSessions(true).catch((err) => {
      showError(err);
      if (err.status === 401) signOut();
    });
  } else {
    showSignedIn(false);
  }
}

start();
