// The rebyte console: plain ES modules, no build step, no dependencies. This
// one signs in and out, switches the tabs (Sessions, Environments, Agents,
// Overview) and keeps the sessions list live; the views are in
// session.js, environments.js, agents.js and overview.js.
//
// Every call is the public API with the key the user signed in with. The key
// lives in this tab's sessionStorage only: never in a URL, a cookie or a log.
// Everything the server returns (model output, tool output, errors) is shown
// with textContent, never parsed as HTML.

import { $, KEY, PAGE, api, clearError, key, listRow, pager, showError, withQuery } from "./common.js";
import { closeAgent, loadAgents, startAgents } from "./agents.js";
import { closeEnvironment, loadEnvironments, openEnvironment, startEnvironments } from "./environments.js";
import { closeOverview, openOverview } from "./overview.js";
import { closeSession, openSession, selectedSession, startSessionView } from "./session.js";

const POLL_MS = 2000;
const TABS = ["sessions", "environments", "agents", "overview"];
let tab = "sessions";

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
    startPolling();
    loadAgentChoices().catch(showError);
    route().catch(showError);
  } catch (err) {
    sessionStorage.removeItem(KEY);
    showError(err);
  }
}

function signOut() {
  stopPolling();
  closeDetails();
  for (const list of ["sessions", "environments", "agents"]) $(list).replaceChildren();
  selectTab("sessions");
  if (location.hash) history.replaceState(null, "", location.pathname);
  sessionStorage.removeItem(KEY);
  showSignedIn(false);
}

// ---- tabs ----

function closeDetails() {
  closeSession();
  closeEnvironment();
  closeAgent();
  closeOverview();
}

function selectTab(name) {
  tab = name;
  for (const t of TABS) {
    $(`tab-${t}`).classList.toggle("selected", t === name);
    $(`${t}-pane`).hidden = t !== name;
  }
}

function showTab(name) {
  closeDetails();
  if (location.hash) history.replaceState(null, "", location.pathname);
  selectTab(name);
  if (name === "environments") return loadEnvironments(true);
  if (name === "agents") return loadAgents(true);
  if (name === "overview") {
    openOverview(showError);
    return Promise.resolve();
  }
  return loadSessions(true);
}

// ---- the sessions list, kept live ----

const sessionRow = (session) =>
  listRow("sessionId", session.id, session.status, session.created_at, (id) => open(id), session.id === selectedSession());

// Filters: by agent (the API's `agent_id`) and by status (here: the API has none).
const agentFilter = () => ($("filter-agent").value ? { agent_id: $("filter-agent").value } : {});
const statusFilter = (session) => !$("filter-status").value || session.status === $("filter-status").value;

const loadPage = pager("/v1/agents/sessions", "sessions", "more", sessionRow, { query: agentFilter, keep: statusFilter });

// Bumped by every fresh load, so a poll read before one (under other filters) is dropped.
let listVersion = 0;
const loadSessions = (fresh) => {
  if (fresh) listVersion++;
  return loadPage(fresh);
};

/** The saved agents as choices of the agent filter (read once signed in). */
async function loadAgentChoices() {
  const page = await api("GET", withQuery("/v1/agents", { limit: "100", order: "desc" }));
  const select = $("filter-agent");
  const chosen = select.value;
  const options = page.data.map((agent) => {
    const option = document.createElement("option");
    option.value = agent.id;
    option.textContent = agent.name ? `${agent.name} (${agent.id})` : agent.id;
    return option;
  });
  select.replaceChildren(select.options[0], ...options);
  select.value = chosen;
}

/** Opens a session, its id in the URL's fragment (`#/sessions/ID`, never the key). */
async function open(id) {
  closeDetails();
  history.replaceState(null, "", `#/sessions/${encodeURIComponent(id)}`);
  try {
    await openSession(id);
  } catch (err) {
    // Another organization's id, or a deleted session: "not found", nothing open.
    closeSession();
    throw err;
  }
}

/** Opens what the URL's fragment names (a session), if anything. */
function route() {
  const match = /^#\/sessions\/([^/]+)$/.exec(location.hash);
  if (!match || !key()) return Promise.resolve();
  const id = decodeURIComponent(match[1]);
  if (id === selectedSession()) return Promise.resolve();
  return open(id);
}

let poller = null;

/**
 * Reads the newest page of sessions every two seconds while the Sessions tab
 * shows: sessions created since appear at the top, statuses are updated.
 * (The API has no organization-wide event stream.)
 */
async function poll() {
  if (tab !== "sessions" || !key()) return;
  const version = listVersion;
  const page = await api("GET", withQuery("/v1/agents/sessions", { limit: String(PAGE), order: "desc", ...agentFilter() }));
  if (tab !== "sessions" || version !== listVersion) return;
  const list = $("sessions");
  const rowOf = (id) => list.querySelector(`button[data-session-id="${CSS.escape(id)}"]`);
  for (const session of page.data) {
    const status = rowOf(session.id)?.querySelector(".status");
    if (status && status.textContent !== session.status) {
      status.textContent = session.status;
      status.dataset.status = session.status;
    }
  }
  // The page is newest first: the sessions not listed yet that come before
  // the first listed one are new.
  const newest = list.querySelector("button[data-session-id]");
  const known = newest ? page.data.findIndex((s) => s.id === newest.dataset.sessionId) : page.data.length;
  const added = page.data.slice(0, known < 0 ? page.data.length : known).filter((s) => !rowOf(s.id) && statusFilter(s));
  for (const session of added.reverse()) list.prepend(sessionRow(session));
}

function startPolling() {
  stopPolling();
  const tick = () =>
    poll()
      .catch(() => {})
      .finally(() => {
        if (poller !== null) poller = setTimeout(tick, POLL_MS);
      });
  poller = setTimeout(tick, POLL_MS);
}

function stopPolling() {
  if (poller) clearTimeout(poller);
  poller = null;
}

// ---- start ----

function start() {
  $("signin").addEventListener("submit", signIn);
  $("signout").addEventListener("click", signOut);
  $("refresh").addEventListener("click", () => loadSessions(true).catch(showError));
  $("more").addEventListener("click", () => loadSessions(false).catch(showError));
  for (const filter of ["filter-agent", "filter-status"]) {
    $(filter).addEventListener("change", () => loadSessions(true).catch(showError));
  }
  window.addEventListener("hashchange", () => route().catch(showError));
  for (const t of TABS) $(`tab-${t}`).addEventListener("click", () => showTab(t).catch(showError));
  startSessionView();
  startEnvironments();
  startAgents();
  document.addEventListener("console:close-details", () => {
    closeSession();
    closeEnvironment();
    closeAgent();
  });
  document.addEventListener("console:session-deleted", () => loadSessions(true).catch(showError));
  document.addEventListener("console:open-session", (event) => {
    const id = event.detail.id;
    showTab("sessions")
      .then(() => open(id))
      .catch(showError);
  });
  document.addEventListener("console:open-environment", (event) => {
    const id = event.detail.id;
    showTab("environments")
      .then(() => openEnvironment(id))
      .catch(showError);
  });
  if (key()) {
    showSignedIn(true);
    startPolling();
    loadSessions(true)
      .then(() => {
        loadAgentChoices().catch(showError);
        return route();
      })
      .catch((err) => {
        showError(err);
        if (err.status === 401) signOut();
      });
  } else {
    showSignedIn(false);
  }
}

start();
