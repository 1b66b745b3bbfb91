// Environments: the organization's list (newest first) and one environment's
// status, setup progress and setup_log (read again every second while it sets
// up, so the log grows on screen), the sessions attached to it, and its files.

import { $, all, api, clearError, el, listRow, pager, showError } from "./common.js";

const SETTING_UP = new Set(["pending", "initializing"]);
let selectedEnvironment = null;

export const loadEnvironments = pager("/v1/agents/environments", "environments", "more-environments", (environment) =>
  listRow("environmentId", environment.id, environment.status, environment.created_at, openEnvironment, environment.id === selectedEnvironment),
);

export function closeEnvironment() {
  selectedEnvironment = null;
  $("environment").hidden = true;
}

export async function openEnvironment(id) {
  clearError();
  document.dispatchEvent(new CustomEvent("console:close-details"));
  selectedEnvironment = id;
  for (const b of document.querySelectorAll("#environments button")) {
    b.classList.toggle("selected", b.dataset.environmentId === id);
  }
  $("environment-title").textContent = id;
  $("environment-log").textContent = "";
  $("environment-setup").textContent = "";
  $("environment-files").replaceChildren();
  $("environment-sessions").replaceChildren();
  $("environment-sessions-note").textContent = "reading the sessions…";
  $("environment-files-note").textContent = "listed once setup is done";
  $("environment").hidden = false;
  loadAttachedSessions(id).catch(showError);
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

/**
 * The sessions attached to the environment, newest first, each opening that
 * session. The API has no filter by environment: the organization's sessions
 * are read and those whose `environment.id` is this one are kept.
 */
async function loadAttachedSessions(id) {
  const sessions = (await all("/v1/agents/sessions", { order: "desc" }, 5000)).filter(
    (s) => s.environment && s.environment.id === id,
  );
  if (selectedEnvironment !== id) return;
  $("environment-sessions").replaceChildren(
    ...sessions.map((s) => {
      const li = el("li");
      const link = el("button", "link", s.id);
      link.type = "button";
      link.dataset.sessionId = s.id;
      link.addEventListener("click", () =>
        document.dispatchEvent(new CustomEvent("console:open-session", { detail: { id: s.id } })),
      );
      const status = el("span", "status", s.status);
      status.dataset.status = s.status;
      li.append(link, document.createTextNode(" "), status);
      return li;
    }),
  );
  $("environment-sessions-note").textContent = sessions.length ? "" : "no sessions";
}

async function loadEnvironmentFiles(id) {
  const page = await api("GET", `/v1/agents/environments/${encodeURIComponent(id)}/files?limit=100`);
  if (selectedEnvironment !== id) return;
  const list = $("environment-files");
  list.replaceChildren(...page.data.map((file) => el("li", "file", `${file.path} (${file.size_bytes} bytes)`)));
  $("environment-files-note").textContent = page.data.length ? "" : "no files";
}

export function startEnvironments() {
  $("refresh-environments").addEventListener("click", () => loadEnvironments(true).catch(showError));
  $("more-environments").addEventListener("click", () => loadEnvironments(false).catch(showError));
}
