// The Keys view, for an admin key: every project's keys with their limits and spend, and a
// form that creates a key or changes one's limits; all through /admin/keys. Cells hold the
// API's raw value in `data-value` and show it formatted; client strings only as text.

import { del, get, patch, post } from "./api.js";
import { el, usd } from "./format.js";

const $ = (id) => document.getElementById(id);

// Each column: [field as `data-field`, the raw value of a key, how it is shown, numeric].
const COLUMNS = [
  ["name", (k) => k.name, (v) => v ?? "(none)", false],
  ["project", (k) => k.project, (v) => v, false],
  ["prefix", (k) => k.prefix, (v) => v, false],
  ["models", (k) => k.models.join(", "), (v) => v || "all", false],
  ["tools", (k) => (k.tools ?? []).join(", "), (v) => v || "all", false],
  ["expires_at", (k) => k.expires_at, (v) => v ?? "never", false],
  ["rpm", (k) => k.rpm, (v) => (v == null ? "–" : String(v)), true],
  ["tpm", (k) => k.tpm, (v) => (v == null ? "–" : String(v)), true],
  ["budget", (k) => k.budget?.usd, usd, true],
  ["period", (k) => k.budget?.period, (v) => v ?? "–", false],
  ["spend", (k) => k.spend?.usd, usd, true],
  ["state", (k) => k.state, (v) => v, false],
];

// The key the form changes; null while it creates one.
let editing = null;
// Its expiry as shown, sent back only when changed (the shown form is not one the API reads).
let shownExpiry = "";
let loaded = [];

export async function load(failed) {
  const project = $("keys-project").value.trim();
  const path = project ? "/admin/keys?project=" + encodeURIComponent(project) : "/admin/keys";
  try {
    const answer = await get(path);
    loaded = answer.data;
    $("keys-error").textContent = "";
    render(failed);
  } catch (error) {
    $("keys-error").textContent = error.message;
    failed(error);
  }
}

function render(failed) {
  const body = $("keys-table").tBodies[0];
  body.replaceChildren(...loaded.map((k) => row(k, failed)));
  $("keys-count").textContent = `${loaded.length} key${loaded.length === 1 ? "" : "s"}`;
  const table = $("keys-table");
  table.dataset.loaded = String(Number(table.dataset.loaded ?? 0) + 1);
}

function row(k, failed) {
  const tr = document.createElement("tr");
  tr.dataset.id = k.id;
  tr.dataset.state = k.state;
  for (const [field, value, show, numeric] of COLUMNS) {
    const raw = value(k);
    const td = el("td", show(raw), numeric ? "num" : "");
    td.dataset.field = field;
    td.dataset.value = raw == null ? "" : String(raw);
    if (!numeric) td.title = raw == null ? "" : String(raw);
    tr.append(td);
  }
  const actions = el("td");
  if (k.state !== "revoked") {
    const edit = el("button", "Edit");
    edit.type = "button";
    edit.dataset.action = "edit";
    edit.addEventListener("click", () => startEditing(k));
    // Two clicks: the first asks, the second revokes (no modal dialog in a strict page).
    const revoke = el("button", "Revoke", "danger");
    revoke.type = "button";
    revoke.dataset.action = "revoke";
    revoke.addEventListener("click", async () => {
      if (revoke.dataset.action === "revoke") {
        revoke.dataset.action = "confirm";
        revoke.textContent = "Revoke now?";
        revoke.className = "confirm";
        return;
      }
      try {
        await del("/admin/keys/" + encodeURIComponent(k.id));
        if (editing === k.id) stopEditing();
        await load(failed);
      } catch (error) {
        $("keys-error").textContent = error.message;
        failed(error);
      }
    });
    actions.append(edit, revoke);
  }
  tr.append(actions);
  return tr;
}

function startEditing(k) {
  editing = k.id;
  $("key-form-title").textContent = `Change ${k.name ?? k.prefix} (${k.project})`;
  $("key-submit").textContent = "Save";
  $("key-cancel").hidden = false;
  $("k-project").value = k.project;
  $("k-project").disabled = true;
  $("k-name").value = k.name ?? "";
  $("k-models").value = k.models.join(", ");
  $("k-tools").value = (k.tools ?? []).join(", ");
  $("k-expires").value = k.expires_at ?? "";
  shownExpiry = $("k-expires").value;
  $("k-rpm").value = k.rpm ?? "";
  $("k-tpm").value = k.tpm ?? "";
  $("k-budget").value = k.budget?.usd ?? "";
  $("k-period").value = k.budget?.period ?? "day";
  $("key-form-error").textContent = "";
  $("new-key").hidden = true;
  $("key-form").scrollIntoView();
}

export function stopEditing() {
  editing = null;
  $("key-form").reset();
  $("key-form-title").textContent = "Create a key";
  $("key-submit").textContent = "Create";
  $("key-cancel").hidden = true;
  $("k-project").disabled = false;
  $("key-form-error").textContent = "";
}

// A number field: null when empty (no limit), else the number; throws naming the field.
function number(id, label) {
  const text = $(id).value.trim();
  if (text === "") return null;
  const n = Number(text);
  if (!Number.isFinite(n)) throw new Error(`${label}: a number, or empty for none`);
  return n;
}

// The form as the admin API takes it: empty fields clear a limit (null).
function fields() {
  const text = (id) => $(id).value.trim() || null;
  const list = (id) => $(id).value.split(",").map((m) => m.trim()).filter((m) => m !== "");
  const body = {
    name: text("k-name"),
    models: list("k-models"),
    tools: list("k-tools"),
    expires: text("k-expires") ?? "never",
    rpm: number("k-rpm", "Requests per minute"),
    tpm: number("k-tpm", "Tokens per minute"),
    budget_usd: number("k-budget", "Budget"),
  };
  if (body.budget_usd != null) body.budget_period = $("k-period").value;
  if (editing && $("k-expires").value === shownExpiry) delete body.expires;
  return body;
}

export async function submit(failed) {
  $("key-form-error").textContent = "";
  try {
    const body = fields();
    if (editing) {
      await patch("/admin/keys/" + encodeURIComponent(editing), body);
      stopEditing();
    } else {
      body.project = $("k-project").value.trim();
      const created = await post("/admin/keys", body);
      $("new-key-secret").textContent = created.key;
      $("new-key-copied").textContent = "";
      $("new-key").hidden = false;
      stopEditing();
    }
    await load(failed);
  } catch (error) {
    $("key-form-error").textContent = error.message;
    failed(error);
  }
}

export async function copy() {
  try {
    await navigator.clipboard.writeText($("new-key-secret").textContent);
    $("new-key-copied").textContent = "copied";
  } catch {
    $("new-key-copied").textContent = "select the key and copy it";
  }
}

// Leaving the view (or signing out) forgets the secret shown.
export function forget() {
  $("new-key-secret").textContent = "";
  $("new-key").hidden = true;
  stopEditing();
  loaded = [];
  $("keys-table").tBodies[0].replaceChildren();
}
