// Helpers every part of the console shares: the signed-in key, API calls,
// the error line, text-only elements and the newest-first page loader.
//
// The key lives in this tab's sessionStorage only: never in a URL, a cookie
// or a log. Everything the server returns is shown with textContent.

export const KEY = "rebyte.key";
export const PAGE = 20;

export const $ = (id) => document.getElementById(id);

/** An element with a class and text (as text, never markup). */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A button of `type="button"` with a label and a click handler. */
export function button(label, onClick, className) {
  const b = el("button", className, label);
  b.type = "button";
  if (onClick) b.addEventListener("click", () => Promise.resolve(onClick()).catch(showError));
  return b;
}

/** An API error, shown as "403 permission_error: …" (the error shape's type and message). */
export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(`${status} ${error.type || "error"}: ${error.message || "the server answered " + status}`);
    this.status = status;
  }
}

export function key() {
  return sessionStorage.getItem(KEY);
}

/** Calls the API with the signed-in key: the raw Response, or an ApiError. */
export async function fetchApi(method, path, body) {
  const headers = { Authorization: `Bearer ${key()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!resp.ok) {
    const text = await resp.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    throw new ApiError(resp.status, json);
  }
  return resp;
}

/** Calls the API with the signed-in key: the parsed JSON, or an ApiError. */
export async function api(method, path, body) {
  const text = await (await fetchApi(method, path, body)).text();
  return text ? JSON.parse(text) : null;
}

export function showError(err) {
  const area = $("error");
  area.textContent = err instanceof Error ? err.message : String(err);
  area.hidden = false;
}

export function clearError() {
  $("error").textContent = "";
  $("error").hidden = true;
}

/** Pretty JSON of a value (a string as it is). */
export const json = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

/** `[path, query]` as a URL path, the query's entries URL-encoded. */
export function withQuery(path, query) {
  return `${path}?${new URLSearchParams(query)}`;
}

/** Every page of a list, oldest call first, up to `max` entries. */
export async function all(path, query, max = 1000) {
  const out = [];
  let after = null;
  while (out.length < max) {
    const q = { limit: "100", ...query };
    if (after) q.after = after;
    const page = await api("GET", withQuery(path, q));
    out.push(...page.data);
    if (!page.has_more || !page.last_id) break;
    after = page.last_id;
  }
  return out;
}

/**
 * A newest-first list of one resource, paged with `after` and a More button.
 * `options.query()` adds to each request's query (a server-side filter);
 * `options.keep(item)` drops rows (a filter the API lacks): pages are then read
 * until a page's worth of rows is shown, or the list ends.
 */
export function pager(path, listId, moreId, row, options = {}) {
  const extra = options.query || (() => ({}));
  const keep = options.keep || (() => true);
  let last = null;
  let generation = 0;
  return async function load(fresh) {
    const mine = fresh ? ++generation : generation;
    let shown = 0;
    let more = true;
    let first = true;
    for (let reads = 0; shown < PAGE && more && reads < 25; reads++) {
      const query = { limit: String(PAGE), order: "desc", ...extra() };
      if (!(fresh && first) && last) query.after = last;
      const page = await api("GET", withQuery(path, query));
      if (mine !== generation) return;
      if (fresh && first) $(listId).replaceChildren();
      first = false;
      for (const item of page.data.filter(keep)) {
        $(listId).append(row(item));
        shown++;
      }
      last = page.last_id || last;
      more = page.has_more;
    }
    $(moreId).hidden = !more;
  };
}

/** A list row: a button with an id, a status and a time, calling `open`. */
export function listRow(dataName, id, status, createdAt, open, selected) {
  const li = el("li");
  const b = el("button", selected ? "selected" : "");
  b.type = "button";
  b.dataset[dataName] = id;
  b.append(el("span", "id", id), document.createTextNode(" "));
  if (status !== undefined && status !== null) {
    const s = el("span", "status", status);
    s.dataset.status = status;
    b.append(s);
  }
  b.append(el("div", "note", new Date(createdAt * 1000).toLocaleString()));
  b.addEventListener("click", () => Promise.resolve(open(id)).catch(showError));
  li.append(b);
  return li;
}
