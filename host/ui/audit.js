// The Audit view, for admins: the audit log from /admin/audit in chain order, narrowed by
// actor, action and time, a page at a time. Client strings only as text; the values before
// and after are shown as the API gives them (already without secrets).

import { get } from "./api.js";
import { el, utc } from "./format.js";

const $ = (id) => document.getElementById(id);
const PAGE = 100;
const HOUR_US = 3_600_000_000;
const RANGES = { "1h": HOUR_US, "24h": 24 * HOUR_US, "7d": 7 * 24 * HOUR_US, "30d": 30 * 24 * HOUR_US };

let last = 0;
let shown = 0;

function query(after) {
  const params = new URLSearchParams({ limit: String(PAGE) });
  const actor = $("a-actor").value.trim();
  const action = $("a-action").value;
  const range = RANGES[$("a-range").value];
  if (actor) params.set("actor", actor);
  if (action) params.set("action", action);
  if (range) params.set("since", String(Date.now() * 1000 - range));
  if (after) params.set("after", String(after));
  return "/admin/audit?" + params;
}

function change(value) {
  return value == null ? "–" : JSON.stringify(value);
}

function row(entry) {
  const tr = document.createElement("tr");
  tr.dataset.seq = String(entry.seq);
  const cells = [
    ["at", utc(entry.at_us)],
    ["actor", entry.actor],
    ["origin", entry.origin],
    ["action", entry.action],
    ["target", entry.target],
    ["before", change(entry.before)],
    ["after", change(entry.after)],
  ];
  for (const [field, text] of cells) {
    const td = el("td", text, field === "before" || field === "after" ? "json" : "");
    td.dataset.field = field;
    tr.append(td);
  }
  return tr;
}

// Loads the first page again (`fresh`) or the next one.
export async function load(fresh, failed) {
  const body = $("audit-table").tBodies[0];
  try {
    const page = await get(query(fresh ? 0 : last));
    if (fresh) {
      body.replaceChildren();
      shown = 0;
    }
    body.append(...page.data.map(row));
    shown += page.data.length;
    if (page.data.length) last = page.data[page.data.length - 1].seq;
    $("audit-more").hidden = !page.has_more;
    $("audit-count").textContent = `${shown} entr${shown === 1 ? "y" : "ies"}`;
    $("audit-error").textContent = "";
    const table = $("audit-table");
    table.dataset.loaded = String(Number(table.dataset.loaded ?? 0) + 1);
  } catch (error) {
    $("audit-error").textContent = error.message;
    failed(error);
  }
}
