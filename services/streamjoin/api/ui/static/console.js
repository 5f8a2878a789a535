// The streamjoin console: reads and writes the REST API with the token kept in sessionStorage.
// Every value from the API is put into the page with textContent (never as HTML); the plan picture
// is SVG rendered and escaped by the server, parsed as XML and imported node by node.
"use strict";

const TOKEN_KEY = "streamjoin.token";
const QUERIES_EVERY_MS = 3000; // the query list refreshes itself this often (docs/console.md)
const $ = (id) => document.getElementById(id);
let selected = null;
let queriesLoading = false;
let resultsAbort = null;
let validateTimer = null;
let validateSeq = 0;

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = text; }
  return { ok: response.ok, status: response.status, data };
}

function errorText(result) {
  const d = result.data;
  if (d && typeof d === "object" && d.detail) {
    return d.detail + (d.field ? " (" + d.field + ")" : "");
  }
  return "HTTP " + result.status;
}

function notice(text) {
  const el = $("notice");
  el.textContent = text || "";
  el.hidden = !text;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function showTokenState() {
  $("token-state").textContent = token() ? "token set (this tab)" : "no token: writes will be refused";
}

// Why a query is not running, from its status and its partitions' states.
function why(q) {
  if (q.status === "running") return "";
  if (q.status === "paused") return "paused by its control; Resume to run it";
  if (q.status === "pending") return "no joiner has claimed it yet: is a joiner worker running?";
  const notRunning = q.partitions.filter((p) => p.state !== "running");
  if (notRunning.length === 0) return "waiting for joiners to claim every partition";
  return notRunning.map((p) => "partition " + p.partition + " " + p.state + " on " + p.worker).join("; ");
}

async function loadStreams() {
  const r = await api("GET", "/v1/streams");
  const body = $("streams").tBodies[0];
  body.replaceChildren();
  if (!r.ok) { notice("streams: " + errorText(r)); return; }
  for (const s of r.data) {
    const tr = el("tr");
    tr.dataset.stream = s.name;
    tr.append(el("td", s.name), el("td", s.topic), el("td", s.timestamp || "—"), el("td", s.key || "—"), el("td", s.schema ? "yes" : "no"));
    body.append(tr);
  }
}

async function loadQueries() {
  const r = await api("GET", "/v1/queries");
  const body = $("queries").tBodies[0];
  if (!r.ok) { body.replaceChildren(); notice("queries: " + errorText(r)); return; }
  const rows = [];
  for (const q of r.data) {
    const tr = el("tr");
    tr.dataset.query = q.name;
    if (q.name === selected) tr.classList.add("selected");
    const name = el("td", q.name, "name");
    name.addEventListener("click", () => select(q.name));
    const status = el("td");
    status.append(el("span", q.status, "status status-" + q.status));
    const action = el("button", q.status === "paused" ? "Resume" : "Pause");
    action.type = "button";
    action.addEventListener("click", async () => {
      const res = await api("POST", "/v1/queries/" + encodeURIComponent(q.name) + (q.status === "paused" ? "/resume" : "/pause"));
      notice(res.ok ? "" : errorText(res));
      await refresh();
    });
    const act = el("td");
    act.append(action);
    tr.append(name, status, el("td", why(q), "why"), el("td", q.partitions.length), act);
    rows.push(tr);
  }
  body.replaceChildren(...rows); // in one step: the list never shows empty between two reads
  $("queries-updated").textContent = "updated " + new Date().toLocaleTimeString();
}

// Re-read the query list every QUERIES_EVERY_MS while the tab is visible, one read at a time.
async function pollQueries() {
  if (queriesLoading || document.hidden) return;
  queriesLoading = true;
  try { await loadQueries(); } finally { queriesLoading = false; }
}

async function loadPlan(name) {
  const box = $("plan");
  const headers = token() ? { Authorization: "Bearer " + token() } : {};
  const response = await fetch("/ui/queries/" + encodeURIComponent(name) + "/plan.svg", { headers });
  if (!response.ok) { box.replaceChildren(el("span", "plan: HTTP " + response.status, "muted")); return; }
  const doc = new DOMParser().parseFromString(await response.text(), "image/svg+xml");
  box.replaceChildren(document.importNode(doc.documentElement, true));
}

async function streamResults(name) {
  if (resultsAbort) resultsAbort.abort();
  const controller = new AbortController();
  resultsAbort = controller;
  const out = $("results");
  out.textContent = "";
  $("results-state").textContent = "listening from latest…";
  $("results-toggle").textContent = "Stop";
  const headers = token() ? { Authorization: "Bearer " + token() } : {};
  const url = "/v1/queries/" + encodeURIComponent(name) + "/results?format=ndjson&limit=1000&timeout_ms=60000";
  try {
    const response = await fetch(url, { headers, signal: controller.signal });
    if (!response.ok) { $("results-state").textContent = "HTTP " + response.status; return; }
    $("results-state").textContent = "positioned: waiting for results";
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let count = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      out.append(document.createTextNode(decoder.decode(value, { stream: true })));
      count = out.textContent.split("\n").length - 1;
      $("results-state").textContent = count + " result(s)";
      out.scrollTop = out.scrollHeight;
    }
    $("results-state").textContent = count + " result(s); the stream ended";
  } catch (e) {
    if (e.name !== "AbortError") $("results-state").textContent = String(e);
  } finally {
    if (resultsAbort === controller) { resultsAbort = null; $("results-toggle").textContent = "Listen"; }
  }
}

async function select(name) {
  selected = name;
  $("detail-section").hidden = false;
  $("detail-name").textContent = name;
  for (const tr of $("queries").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.query === name);
  await loadPlan(name);
  streamResults(name);
}

function controlRow(table, attribute) {
  const tr = el("tr");
  tr.append(el("td", attribute, "attr"));
  const td = el("td");
  const value = table.attributes[attribute];
  if (table.writable.includes(attribute) && table.entity === "query") {
    const input = el("input");
    input.value = JSON.stringify(value);
    input.dataset.control = table.name + "." + attribute;
    input.spellcheck = false;
    const apply = el("button", "Apply");
    apply.type = "button";
    apply.dataset.apply = table.name + "." + attribute;
    apply.addEventListener("click", async () => {
      let parsed;
      try { parsed = JSON.parse(input.value); } catch (e) { notice(attribute + ": not JSON: " + e.message); return; }
      const res = await api("PATCH", "/v1/control/queries/" + encodeURIComponent(table.name), { [attribute]: parsed });
      notice(res.ok ? "" : attribute + ": " + errorText(res));
      await refresh();
    });
    td.append(input, apply);
  } else {
    td.textContent = typeof value === "object" ? JSON.stringify(value) : String(value);
  }
  tr.append(td);
  return tr;
}

async function loadControl() {
  const r = await api("GET", "/v1/control");
  const box = $("control");
  box.replaceChildren();
  if (!r.ok) { notice("control: " + errorText(r)); return; }
  for (const table of r.data) {
    const div = el("div", null, "control-table");
    div.dataset.entity = table.entity;
    div.dataset.name = table.name;
    div.append(el("h4", table.entity + " " + table.name));
    const t = el("table");
    const attributes = [...table.writable, ...Object.keys(table.attributes).filter((a) => !table.writable.includes(a)).sort()];
    for (const a of attributes) if (a in table.attributes) t.append(controlRow(table, a));
    div.append(t);
    box.append(div);
  }
}

function draft() {
  const body = { name: $("q-name").value.trim(), output: { topic: $("q-output").value.trim() } };
  body[$("q-lang").value] = $("q-text").value;
  return body;
}

// The line of the query text holding `position` and a caret under that character, in a block that
// never wraps (it scrolls sideways), so the caret stays under its column however long the line is.
// Tabs before the column are kept in the caret's line, so they push it as far as in the text.
function excerpt(position) {
  const text = $("q-text").value;
  const start = text.lastIndexOf("\n", position - 1) + 1;
  const end = text.indexOf("\n", position);
  const line = text.slice(start, end < 0 ? undefined : end);
  const pre = el("pre", null, "excerpt");
  const mark = el("span", line.slice(0, position - start).replace(/[^\t]/g, " ") + "^", "caret");
  pre.append(el("span", line, "line"), document.createTextNode("\n"), mark);
  return pre;
}

async function validate() {
  const seq = ++validateSeq;
  const out = $("validation");
  if (!$("q-text").value.trim()) { out.className = "validation muted"; out.textContent = "type a query: it is checked as you type"; return; }
  const r = await api("POST", "/v1/queries:validate", draft());
  if (seq !== validateSeq) return; // a newer keystroke's answer wins
  if (r.ok) {
    out.className = "validation ok";
    out.textContent = "valid: reads " + r.data.streams.join(", ") + (r.data.exists ? " (a query of this name exists)" : "");
  } else {
    out.className = "validation error";
    out.replaceChildren(el("div", errorText(r), "message"));
    const position = r.data && r.data.position;
    if (typeof position !== "number") return;
    const pre = excerpt(position);
    out.append(pre);
    const mark = pre.querySelector(".caret");
    pre.scrollLeft = Math.max(0, mark.offsetWidth - pre.clientWidth / 2); // the caret in view
  }
}

async function refresh() {
  await Promise.all([loadStreams(), loadQueries(), loadControl()]);
  if (selected) await loadPlan(selected);
}

document.addEventListener("DOMContentLoaded", () => {
  showTokenState();
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value);
    $("token").value = "";
    showTokenState();
    refresh();
  });
  $("token-clear").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); showTokenState(); });
  $("refresh").addEventListener("click", refresh);
  for (const id of ["q-name", "q-output", "q-text", "q-lang"]) {
    $(id).addEventListener("input", () => { clearTimeout(validateTimer); validateTimer = setTimeout(validate, 250); });
  }
  $("editor").addEventListener("submit", async (e) => {
    e.preventDefault();
    const r = await api("POST", "/v1/queries", draft());
    notice(r.ok ? "" : "register: " + errorText(r));
    if (r.ok) { await refresh(); select(r.data.name); }
  });
  $("replan").addEventListener("click", async () => {
    if (!selected) return;
    const r = await api("POST", "/v1/queries/" + encodeURIComponent(selected) + "/replan");
    notice(r.ok ? "" : "replan: " + errorText(r));
  });
  $("results-toggle").addEventListener("click", () => {
    if (resultsAbort) { resultsAbort.abort(); } else if (selected) { streamResults(selected); }
  });
  refresh();
  setInterval(pollQueries, QUERIES_EVERY_MS);
});
