// One session: its turns and items, newest first from the API and older ones
// on demand (Load older), kept live by the session's event stream (read with
// fetch, as an EventSource cannot send the Authorization header; reconnecting
// with Last-Event-ID), its artifacts with download, and the inputs: send,
// cancel, delete.

import { $, ApiError, api, clearError, el, fetchApi, key, showError, withQuery } from "./common.js";
import {
  hasTurn, itemNode, postInput, renderApprovals, renderItem, renderTurn, textOf, turnNode,
} from "./items.js";

const HISTORY_PAGE = 100;
const ENDED = new Set(["completed", "failed", "cancelled", "incomplete"]);

let selected = null;

const base = (id) => `/v1/agents/sessions/${encodeURIComponent(id)}`;

export function selectedSession() {
  return selected && selected.id;
}

export function closeSession() {
  if (selected) selected.controller.abort();
  selected = null;
  disarmDelete();
  $("session").hidden = true;
  $("session").dataset.sessionId = "";
  $("session-info").replaceChildren();
  $("turns").replaceChildren();
  $("artifacts").replaceChildren();
  $("older").hidden = true;
}

export async function openSession(id) {
  clearError();
  closeSession();
  const session = {
    id, controller: new AbortController(), lastEventId: null, loaded: false, buffer: [], connected: false,
    // History paging: the cursors of the items and turns lists (newest first),
    // and turns read but not shown yet (they are older than every item on screen).
    itemsAfter: null, itemsMore: true, turnsAfter: null, turnsMore: true, turnQueue: [],
  };
  selected = session;
  for (const b of document.querySelectorAll("#sessions button")) {
    b.classList.toggle("selected", b.dataset.sessionId === id);
  }
  $("session-title").textContent = id;
  $("session").dataset.sessionId = id;
  $("session").hidden = false;
  // Subscribe first, then read the history: nothing between the two is lost
  // (events that arrive meanwhile wait in the buffer).
  await stream(session);
  await loadHistory(session, true);
  loadArtifacts(session).catch(showError);
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

/** The session's agent (and the version it pinned) and its environment, which opens. */
function renderInfo(info) {
  const agent = info.agent || {};
  const parts = [document.createTextNode(`agent ${agent.name ? `${agent.name} ` : ""}${agent.id}${agent.version != null ? ` v${agent.version}` : ""} · model ${agent.model} · `)];
  const environment = info.environment && info.environment.id;
  if (environment) {
    const link = el("button", "link", environment);
    link.type = "button";
    link.dataset.environmentId = environment;
    link.addEventListener("click", () =>
      document.dispatchEvent(new CustomEvent("console:open-environment", { detail: { id: environment } })),
    );
    parts.push(document.createTextNode("environment "), link);
  } else {
    parts.push(document.createTextNode("no environment"));
  }
  $("session-info").replaceChildren(...parts);
}

/**
 * Reads the session and its history, then applies the events buffered
 * meanwhile. `fresh`: the newest page of items (with their turns) into an
 * empty view; otherwise (back after a drop with no event id to resume from)
 * the newest page again, adding what is missing below.
 */
async function loadHistory(session, fresh) {
  session.loaded = false;
  try {
    const info = await api("GET", base(session.id));
    if (selected !== session) return;
    setSessionStatus(info.status);
    renderInfo(info);
    if (fresh) await loadOlder(session);
    else await catchUp(session);
    if (selected !== session) return;
    renderApprovals(info.required_actions);
  } finally {
    session.loaded = true;
    for (const event of session.buffer.splice(0)) apply(session, event, true);
  }
}

/** The newest items and turns again, in order, adding what is missing at the bottom. */
async function catchUp(session) {
  const query = { order: "desc", limit: String(HISTORY_PAGE) };
  const [turns, items] = await Promise.all([
    api("GET", withQuery(`${base(session.id)}/turns`, query)),
    api("GET", withQuery(`${base(session.id)}/items`, query)),
  ]);
  if (selected !== session) return;
  for (const item of items.data.slice().reverse()) renderItem(item.turn_id || "none", item);
  for (const turn of turns.data.slice().reverse()) if (hasTurn(turn.id)) renderTurn(turn);
}

/** The next page of older items, each above what is shown, with the turns down to theirs. */
async function loadOlder(session) {
  const query = { order: "desc", limit: String(HISTORY_PAGE) };
  if (session.itemsAfter) query.after = session.itemsAfter;
  const page = session.itemsMore ? await api("GET", withQuery(`${base(session.id)}/items`, query)) : { data: [] };
  if (selected !== session) return;
  for (const item of page.data) {
    await showTurnsDownTo(session, item.turn_id || "none");
    if (selected !== session) return;
    renderItem(item.turn_id || "none", item, true);
  }
  if (session.itemsMore) {
    session.itemsAfter = page.last_id || session.itemsAfter;
    session.itemsMore = page.has_more && page.data.length > 0;
  }
  if (!session.itemsMore) {
    // Every item is shown: the turns left have none of their own.
    while (session.turnQueue.length || session.turnsMore) {
      if (!session.turnQueue.length) await readTurns(session);
      else showTurn(session.turnQueue.shift());
      if (selected !== session) return;
    }
  }
  $("older").hidden = !(session.itemsMore || session.turnQueue.length || session.turnsMore);
}

/** Shows read turns (newest first, each above the last) until `turnId` is on screen. */
async function showTurnsDownTo(session, turnId) {
  while (!hasTurn(turnId)) {
    if (session.turnQueue.length) showTurn(session.turnQueue.shift());
    else if (session.turnsMore) await readTurns(session);
    else turnNode(turnId, true);
    if (selected !== session) return;
  }
}

function showTurn(turn) {
  if (!hasTurn(turn.id)) turnNode(turn.id, true);
  renderTurn(turn);
}

async function readTurns(session) {
  const query = { order: "desc", limit: String(HISTORY_PAGE) };
  if (session.turnsAfter) query.after = session.turnsAfter;
  const page = await api("GET", withQuery(`${base(session.id)}/turns`, query));
  session.turnQueue.push(...page.data);
  session.turnsAfter = page.last_id || session.turnsAfter;
  session.turnsMore = page.has_more && page.data.length > 0;
}

async function older() {
  const session = selected;
  if (!session) return;
  clearError();
  $("older").disabled = true;
  try {
    await loadOlder(session);
  } finally {
    $("older").disabled = false;
  }
}

/**
 * Reads the session's event stream, reconnecting with Last-Event-ID after a
 * drop. The returned promise settles once the first connection is open.
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
        const resp = await fetch(`${base(session.id)}/events`, { headers, signal: session.controller.signal });
        if (!resp.ok) {
          const body = await resp.json().catch(() => null);
          throw new ApiError(resp.status, body);
        }
        $("stream-status").textContent = "live";
        // Back after a drop without an event id to resume from: what happened
        // meanwhile is read from the stored history instead.
        if (session.connected && !session.lastEventId) loadHistory(session, false).catch(showError);
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
    renderApprovals(event.session.required_actions);
    // A turn that waits for a client's result says so on the session, not in
    // an event of its own: read those turns again.
    const waiting = new Set((event.session.required_actions || []).map((a) => a.turn_id).filter(Boolean));
    for (const turnId of waiting) refreshTurn(session, turnId);
  }
  if (event.turn && type.startsWith("agent.session.turn.")) {
    renderTurn(event.turn);
    // Outputs are collected into artifacts as a turn ends.
    if (ENDED.has(event.turn.status)) loadArtifacts(session).catch(showError);
  }
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
    const before = turnNode(turnId).dataset.status;
    const turn = await api("GET", `${base(session.id)}/turns/${encodeURIComponent(turnId)}`);
    // An event that came meanwhile is newer than this answer.
    if (selected === session && turnNode(turnId).dataset.status === before) renderTurn(turn);
  } catch (err) {
    showError(err);
  }
}

// ---- artifacts ----

/** The session's artifacts (newest first), each with a Download button. */
async function loadArtifacts(session) {
  const page = await api("GET", withQuery(`${base(session.id)}/artifacts`, { limit: "100", order: "desc" }));
  if (selected !== session) return;
  const rows = page.data.map((artifact) => {
    const li = el("li", "artifact");
    li.dataset.artifactId = artifact.id;
    const download = el("button", "download", "Download");
    download.type = "button";
    download.addEventListener("click", () => downloadArtifact(session, artifact).catch(showError));
    li.append(el("span", "path", artifact.path), el("span", "note", ` ${artifact.size_bytes} bytes `), download);
    return li;
  });
  $("artifacts").replaceChildren(...rows);
  $("artifacts-note").textContent = rows.length ? "" : "no artifacts";
}

/**
 * Downloads an artifact: read with the key (a plain link could not send it),
 * then saved from a blob: URL under its file name.
 */
async function downloadArtifact(session, artifact) {
  clearError();
  const resp = await fetchApi("GET", `${base(session.id)}/artifacts/${encodeURIComponent(artifact.id)}/content`);
  const url = URL.createObjectURL(await resp.blob());
  const link = el("a");
  link.href = url;
  link.download = artifact.path.split("/").pop() || "artifact";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// ---- input ----

async function send(event) {
  event.preventDefault();
  if (!selected) return;
  clearError();
  const text = $("message").value;
  try {
    await postInput({ type: "agent.session.input.message", input: [{ role: "user", content: [{ type: "input_text", text }] }] });
    $("message").value = "";
  } catch (err) {
    showError(err);
  }
}

async function cancel() {
  if (!selected) return;
  clearError();
  try {
    await postInput({ type: "agent.session.input.cancel" });
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
    await api("DELETE", base(id));
    closeSession();
    document.dispatchEvent(new CustomEvent("console:session-deleted", { detail: { id } }));
  } catch (err) {
    showError(err);
  }
}

function disarmDelete() {
  const button = $("delete");
  button.dataset.armed = "false";
  button.textContent = "Delete";
}

export function startSessionView() {
  $("send").addEventListener("submit", send);
  $("cancel").addEventListener("click", cancel);
  $("delete").addEventListener("click", deleteSession);
  $("older").addEventListener("click", () => older().catch(showError));
}
