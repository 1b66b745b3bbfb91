// Agents: the organization's saved agents (newest first) and, for one, its
// configuration and its versions. The API serves an agent's current version
// only; an older version's configuration is shown from a session that pinned
// it (a session keeps the snapshot of the version it was created with), with
// the sessions on each version.

import { $, all, api, clearError, el, json, listRow, pager, showError } from "./common.js";

let selectedAgent = null;

export const loadAgents = pager("/v1/agents", "agents", "more-agents", (agent) =>
  listRow("agentId", agent.id, `v${agent.version}`, agent.created_at, openAgent, agent.id === selectedAgent),
);

export function closeAgent() {
  selectedAgent = null;
  $("agent").hidden = true;
}

/** What configures an agent (the resource without its bookkeeping). */
function config(agent) {
  const { id: _id, object: _object, created_at: _c, updated_at: _u, version: _v, ...rest } = agent;
  return rest;
}

export async function openAgent(id) {
  clearError();
  document.dispatchEvent(new CustomEvent("console:close-details"));
  selectedAgent = id;
  for (const b of document.querySelectorAll("#agents button")) {
    b.classList.toggle("selected", b.dataset.agentId === id);
  }
  $("agent-title").textContent = id;
  $("agent-version").textContent = "";
  $("agent-config").textContent = "";
  $("agent-versions").replaceChildren();
  $("agent").hidden = false;
  const [agent, sessions] = await Promise.all([
    api("GET", `/v1/agents/${encodeURIComponent(id)}`),
    all("/v1/agents/sessions", { agent_id: id, order: "desc" }, 5000),
  ]);
  if (selectedAgent !== id) return;
  $("agent-title").textContent = agent.name ? `${agent.name} (${agent.id})` : agent.id;
  $("agent-version").textContent = `version ${agent.version}`;
  $("agent-config").textContent = json(config(agent));
  const byVersion = new Map();
  for (const s of sessions) {
    const v = s.agent && s.agent.version;
    if (v == null) continue;
    if (!byVersion.has(v)) byVersion.set(v, []);
    byVersion.get(v).push(s);
  }
  const rows = [];
  for (let v = agent.version; v >= 1; v--) rows.push(versionRow(v, v === agent.version ? agent : null, byVersion.get(v) || []));
  $("agent-versions").replaceChildren(...rows);
}

/** One version: its sessions and its configuration (the agent's, or a pinning session's snapshot). */
function versionRow(version, current, sessions) {
  const details = el("details", "version");
  details.dataset.version = String(version);
  const count = `${sessions.length} session${sessions.length === 1 ? "" : "s"}`;
  details.append(el("summary", "", `version ${version}${current ? " (current)" : ""} · ${count}`));
  let shown = null;
  if (current) shown = config(current);
  else if (sessions.length) {
    const { id: _id, version: _v, ...snapshot } = sessions[0].agent;
    shown = snapshot;
  }
  if (shown) details.append(el("pre", "config", json(shown)));
  else details.append(el("p", "note", "no session pinned this version: its configuration is not shown by the API"));
  if (sessions.length) {
    const list = el("ul", "version-sessions");
    for (const s of sessions) {
      const li = el("li");
      const link = el("button", "link", s.id);
      link.type = "button";
      link.dataset.sessionId = s.id;
      link.addEventListener("click", () =>
        document.dispatchEvent(new CustomEvent("console:open-session", { detail: { id: s.id } })),
      );
      li.append(link);
      list.append(li);
    }
    details.append(list);
  }
  return details;
}

export function startAgents() {
  $("refresh-agents").addEventListener("click", () => loadAgents(true).catch(showError));
  $("more-agents").addEventListener("click", () => loadAgents(false).catch(showError));
}
