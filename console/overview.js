// The overview: the server's Prometheus `/metrics` (text format), read every
// two seconds while shown and parsed here — turns per minute (from the
// turns counter over the last minute of readings), turns by status,
// failures, sandboxes by state, tool calls and requests. The figures are
// the server's, not only this key's organization.

import { $, ApiError, el } from "./common.js";

const EVERY_MS = 2000;
const WINDOW_MS = 60000;

let timer = null;
let samples = [];

/** Parses the Prometheus text format: name → [{labels, value}]. */
export function parseMetrics(text) {
  const families = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = {};
    for (const l of (match[3] || "").matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    }
    const value = Number(match[4]);
    if (!families.has(match[1])) families.set(match[1], []);
    families.get(match[1]).push({ labels, value });
  }
  return families;
}

/** The sum of a family's samples whose labels include `where`. */
function sum(families, name, where = {}) {
  return (families.get(name) || [])
    .filter((s) => Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((total, s) => total + s.value, 0);
}

function byLabel(families, name, label) {
  const out = new Map();
  for (const s of families.get(name) || []) out.set(s.labels[label], (out.get(s.labels[label]) || 0) + s.value);
  return out;
}

async function read() {
  const resp = await fetch("/metrics");
  if (!resp.ok) throw new ApiError(resp.status, await resp.json().catch(() => null));
  const families = parseMetrics(await resp.text());
  const now = performance.now();
  samples.push({ at: now, turns: sum(families, "rebyte_turns_total") });
  samples = samples.filter((s) => now - s.at <= WINDOW_MS);
  render(families);
}

function card(id, label, value) {
  const node = el("div", "card");
  node.dataset.metric = id;
  node.append(el("div", "value", value), el("div", "note", label));
  return node;
}

function render(families) {
  const first = samples[0];
  const last = samples[samples.length - 1];
  const perMinute =
    samples.length > 1 && last.at > first.at ? (((last.turns - first.turns) * 60000) / (last.at - first.at)).toFixed(1) : "measuring…";
  const sandboxes = byLabel(families, "rebyte_sandboxes", "state");
  $("overview-cards").replaceChildren(
    card("turns_per_minute", "turns per minute (last minute)", perMinute),
    card("turns", "turns ended", sum(families, "rebyte_turns_total")),
    card("failed", "failed turns", sum(families, "rebyte_turns_total", { status: "failed" })),
    card("sandboxes_running", "running sandboxes", sandboxes.get("running") || 0),
    card("tool_calls", "tool calls", sum(families, "rebyte_tool_calls_total")),
    card("requests", "HTTP requests", sum(families, "rebyte_http_requests_total")),
  );
  const table = (name, label) => {
    const rows = [...byLabel(families, name, label)].map(([k, v]) => {
      const tr = el("tr");
      tr.dataset.key = k;
      tr.append(el("td", "", k), el("td", "num", v));
      return tr;
    });
    return rows;
  };
  $("overview-turns").replaceChildren(...table("rebyte_turns_total", "status"));
  $("overview-sandboxes").replaceChildren(...table("rebyte_sandboxes", "state"));
  $("overview-updated").textContent = `read ${new Date().toLocaleTimeString()}`;
}

export function openOverview(onError) {
  closeOverview();
  samples = [];
  $("overview").hidden = false;
  const tick = () =>
    read()
      .catch(onError)
      .finally(() => {
        if (timer !== null) timer = setTimeout(tick, EVERY_MS);
      });
  timer = 0;
  tick();
}

export function closeOverview() {
  if (timer) clearTimeout(timer);
  timer = null;
  $("overview").hidden = true;
}
