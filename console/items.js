// Rendering one session's turns and items, as text: each turn is a box of its
// items; a client function call waiting for its result gets a form, an MCP
// call waiting for approval gets Approve and Deny. Older turns are put above
// the ones on screen (`top`), new ones below.

import { $, api, clearError, el, json, showError } from "./common.js";

const eventsPath = () => `/v1/agents/sessions/${encodeURIComponent($("session").dataset.sessionId)}/events`;

/** Posts one input event to the open session. */
export async function postInput(event) {
  await api("POST", eventsPath(), { events: [event] });
}

export function hasTurn(turnId) {
  return !!document.querySelector(`#turns .turn[data-turn-id="${CSS.escape(turnId)}"]`);
}

/** The box of a turn, made (at the bottom, or at the `top`) if missing. */
export function turnNode(turnId, top = false) {
  let node = document.querySelector(`#turns .turn[data-turn-id="${CSS.escape(turnId)}"]`);
  if (!node) {
    node = el("div", "turn");
    node.dataset.turnId = turnId;
    const head = el("div", "bar");
    head.append(el("span", "label", turnId), el("span", "status turn-status"));
    node.append(head, el("p", "turn-error"), el("div", "items"), el("div", "approvals"));
    if (top) $("turns").prepend(node);
    else $("turns").append(node);
  }
  return node;
}

export function renderTurn(turn) {
  const node = turnNode(turn.id);
  const status = node.querySelector(".turn-status");
  status.textContent = turn.status;
  status.dataset.status = turn.status;
  node.dataset.status = turn.status;
  const error = node.querySelector(".turn-error");
  error.textContent = turn.error ? `${turn.error.code || "error"}: ${turn.error.message}` : "";
  error.hidden = !turn.error;
}

/** The box of an item inside its turn's, made (last, or first when `top`) if missing. */
export function itemNode(turnId, itemId, type, top = false) {
  let node = document.querySelector(`#turns .item[data-item-id="${CSS.escape(itemId)}"]`);
  if (!node) {
    node = el("div", "item");
    node.dataset.itemId = itemId;
    node.dataset.type = type;
    const items = turnNode(turnId, top).querySelector(".items");
    if (top) items.prepend(node);
    else items.append(node);
  }
  return node;
}

/** The <pre> of class `name` inside an item, made if missing. */
export function textOf(node, name) {
  let pre = node.querySelector(`pre.${name}`);
  if (!pre) {
    pre = el("pre", name);
    node.append(pre);
  }
  return pre;
}

/** Renders an item whole (replacing what deltas built), as text. */
export function renderItem(turnId, item, top = false) {
  const node = itemNode(turnId, item.id, item.type, top);
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
      parts.push(el("div", "note", "arguments"));
      pre("arguments", json(item.arguments));
      if (item.output != null) {
        parts.push(el("div", "note", "output"));
        pre("output", json(item.output));
      }
      if (item.error != null) {
        parts.push(el("div", "note", "error"));
        pre("error", json(item.error));
      }
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
  const send = el("button", "", "Send result");
  send.type = "submit";
  form.append(input, send);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    send.disabled = true;
    try {
      await postInput({ type: "agent.session.input.tool_result", turn_id: turnId, call_id: callId, success: true, output: input.value });
    } catch (err) {
      send.disabled = false;
      showError(err);
    }
  });
  return form;
}

/**
 * Shows the session's waiting MCP approval requests (its `required_actions`),
 * each in its turn's box with Approve and Deny; answered ones disappear.
 */
export function renderApprovals(actions) {
  const wanted = (actions || []).filter((a) => a.type === "mcp_approval_request");
  const ids = new Set(wanted.map((a) => a.request_id));
  for (const node of document.querySelectorAll("#turns .approval")) {
    if (!ids.has(node.dataset.requestId)) node.remove();
  }
  for (const action of wanted) {
    if (document.querySelector(`#turns .approval[data-request-id="${CSS.escape(action.request_id)}"]`)) continue;
    turnNode(action.turn_id).querySelector(".approvals").append(approvalNode(action));
  }
}

function approvalNode(action) {
  const request = action.request || {};
  const node = el("div", "approval");
  node.dataset.requestId = action.request_id;
  const decided = el("span", "note decided");
  const decide = (decision) => async () => {
    clearError();
    for (const b of node.querySelectorAll("button")) b.disabled = true;
    try {
      await postInput({
        type: "agent.session.input.mcp_approval_request_result",
        request_id: action.request_id,
        response: { type: "mcp_tool_call", decision },
      });
      decided.textContent = decision === "approve" ? "approved" : "denied";
    } catch (err) {
      for (const b of node.querySelectorAll("button")) b.disabled = false;
      showError(err);
    }
  };
  const approve = el("button", "approve", "Approve");
  approve.type = "button";
  approve.addEventListener("click", decide("approve"));
  const deny = el("button", "deny", "Deny");
  deny.type = "button";
  deny.addEventListener("click", decide("deny"));
  const bar = el("div", "bar");
  bar.append(approve, deny, decided);
  node.append(
    el("div", "label", `approval requested: ${request.server_label}.${request.name} (${action.request_id})`),
    el("div", "note", request.message || ""),
    el("pre", "arguments", json(request.arguments)),
    bar,
  );
  return node;
}
