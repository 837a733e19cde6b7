// The request log: the `/usage/requests` API's filters, its cursor pages, and one request's
// full record (`GET /usage/requests/{id}`).

import { get, post } from "./api.js";
import { count, el, ms, rangeOf, usd, utc } from "./format.js";

const $ = (id) => document.getElementById(id);

let query = null;
let cursor = null;
let shown = 0;

// The filters as the API takes them (empty fields left out).
function filters() {
  const { start, end } = rangeOf($("log-range").value);
  const q = { start_time_us: start, end_time_us: end, limit: 50 };
  const text = { model: "f-model", provider: "f-provider", user_id: "f-user", api_key_id: "f-key", guard: "f-guard" };
  for (const [param, id] of Object.entries(text)) {
    const v = $(id).value.trim();
    if (v) q[param] = v;
  }
  const tag = $("f-tag").value.trim();
  if (tag) q.user_tags = [tag];
  if ($("f-status").value) q.status = $("f-status").value;
  if ($("f-dialect").value) q.dialect = $("f-dialect").value;
  if ($("f-guard-action").value) q.guard_action = $("f-guard-action").value;
  return q;
}

export async function load(fresh, onError) {
  if (fresh) {
    query = filters();
    $("log").dataset.start = String(query.start_time_us);
    $("log").dataset.end = String(query.end_time_us);
    delete $("log").dataset.loaded;
    cursor = null;
    shown = 0;
    $("log").tBodies[0].replaceChildren();
  }
  $("log-error").textContent = "";
  try {
    const page = await post("/usage/requests", cursor ? { ...query, cursor } : query);
    for (const r of page.data) $("log").tBodies[0].append(row(r));
    shown += page.data.length;
    cursor = page.next_cursor;
    $("more").hidden = !page.has_more;
    $("log-count").textContent = `${count(shown)} request${shown === 1 ? "" : "s"} shown${page.has_more ? ", more older" : ""}`;
    $("log").dataset.loaded = String(shown);
  } catch (error) {
    $("log-error").textContent = error.message;
    onError(error);
  }
}

function row(r) {
  const tr = document.createElement("tr");
  tr.dataset.requestId = r.request_id;
  const link = el("a", r.request_id);
  link.href = "#/request/" + encodeURIComponent(r.request_id);
  const cells = [
    el("td", utc(r.time_us)),
    el("td"),
    el("td", String(r.status), r.status >= 200 && r.status < 300 ? "" : "status-bad"),
    el("td", r.provider ?? "–"),
    el("td", r.model ?? "–"),
    el("td", r.user.id ?? "–"),
    el("td", count(r.input_tokens), "num"),
    el("td", count(r.output_tokens), "num"),
    el("td", usd(r.cost), "num"),
    el("td", ms(r.latency_us), "num"),
  ];
  cells[1].append(link);
  cells[1].title = r.request_id;
  tr.append(...cells);
  return tr;
}

// A request's guard verdicts in a line: `no-cards request refuse (card 1); ...` (never values).
function verdicts(list) {
  if (!list || !list.length) return "–";
  return list
    .map((v) => {
      const counts = Object.entries(v.counts ?? {}).map(([kind, n]) => `${kind} ${n}`);
      return `${v.guard} ${v.side} ${v.action}${counts.length ? ` (${counts.join(", ")})` : ""}`;
    })
    .join("; ");
}

// One request's record, every field.
export async function open(id, onError) {
  $("request-title").textContent = id;
  $("request-fields").replaceChildren();
  try {
    const r = await get("/usage/requests/" + encodeURIComponent(id));
    const fields = [
      ["Request id", r.request_id],
      ["Time (UTC)", `${utc(r.time_us)} (${r.time_us} µs)`],
      ["Status", String(r.status)],
      ["Error", r.error_type ?? "–"],
      ["Dialect", r.dialect],
      ["Provider", r.provider ?? "–"],
      ["Model", r.model ?? "–"],
      ["User id", r.user.id ?? "–"],
      ["User name", r.user.name ?? "–"],
      ["User tags", r.user.tags.length ? r.user.tags.join(", ") : "–"],
      ["API key id", r.api_key_id ?? "–"],
      ["Input tokens", count(r.input_tokens)],
      ["Cached input tokens", count(r.cached_input_tokens)],
      ["Output tokens", count(r.output_tokens)],
      ["Estimated", r.estimated ? "yes (counted by the gateway)" : "no"],
      ["Cost", usd(r.cost)],
      ["Latency", ms(r.latency_us)],
      ["Time to first token", ms(r.ttft_us)],
      ["Guards", verdicts(r.guards)],
    ];
    const dl = $("request-fields");
    for (const [label, value] of fields) {
      const dd = el("dd", value);
      dd.dataset.field = label;
      dl.append(el("dt", label), dd);
    }
    dl.dataset.requestId = r.request_id;
  } catch (error) {
    $("request-fields").append(el("dd", error.status === 404 ? "No request of this project has this id." : error.message, "error"));
    onError(error);
  }
}
