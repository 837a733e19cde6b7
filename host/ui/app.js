// The console: sign-in, the project's overview (totals against the previous range, charts,
// breakdowns), the request log and one request. Every figure comes from the usage API, for the
// range shown in `#overview`'s data-start and data-end. Signed in with an admin key, the page
// shows the Keys view only: the usage APIs take a project's key. Signed in through the
// identity provider, the session's roles decide: an admin sees Keys and Audit, a project
// admin Keys and its project's usage, a viewer its project's usage.

import {
  SignedOut, current, isAdmin, key, loadSession, managesKeys, oidcOn, post, sessionProject, signIn, signOut,
} from "./api.js";
import * as audit from "./audit.js";
import { lines, resize, stacked } from "./charts.js";
import { count, el, ms, percent, rangeOf, usd } from "./format.js";
import * as keys from "./keys.js";
import * as log from "./log.js";
import { Breakdown } from "./tables.js";

const $ = (id) => document.getElementById(id);
const FOLLOW_EVERY_MS = 10_000;

const breakdowns = {
  provider: new Breakdown($("by-provider"), "provider"),
  model: new Breakdown($("by-model"), "model"),
  user: new Breakdown($("by-user"), "user"),
  tag: new Breakdown($("by-tag"), "tag"),
};
let timer = null;
let loading = false;

// The tiles: [field, label, (total) => raw value, format, whether more is worse].
const TILES = [
  ["cost", "Cost", (t) => t.cost, usd, true],
  ["requests", "Requests", (t) => t.requests, count, false],
  ["input_tokens", "Input tokens", (t) => t.input_tokens, count, false],
  ["output_tokens", "Output tokens", (t) => t.output_tokens, count, false],
  ["cached_input_tokens", "Cached input tokens", (t) => t.cached_input_tokens, count, false],
  // Output lines of batches, at the batch price (part of the cost and requests above).
  ["batch_cost", "Batch cost", (t) => t.batch?.cost, usd, true],
  ["batch_requests", "Batch requests", (t) => t.batch?.requests, count, false],
  ["error_rate", "Error rate", (t) => t.error_rate, percent, true],
  ["cache_hits", "Cache hits", (t) => t.cache_hits, count, false],
  ["cache_hit_rate", "Cache hit rate", (t) => t.cache_hit_rate, percent, false],
  ["saved_cost", "Saved by the cache", (t) => t.saved_cost, usd, false],
  ["latency_p50", "Latency p50", (t) => t.latency_us.p50, ms, true],
  ["latency_p90", "Latency p90", (t) => t.latency_us.p90, ms, true],
  ["latency_p99", "Latency p99", (t) => t.latency_us.p99, ms, true],
  ["ttft_p50", "TTFT p50", (t) => t.ttft_us.p50, ms, true],
  ["ttft_p90", "TTFT p90", (t) => t.ttft_us.p90, ms, true],
  ["ttft_p99", "TTFT p99", (t) => t.ttft_us.p99, ms, true],
];

function show(section) {
  for (const id of ["sign-in", "overview", "requests", "request", "keys", "audit"]) $(id).hidden = id !== section;
  const signedIn = section !== "sign-in";
  const admin = signedIn && isAdmin();
  const usage = signedIn && (key() ? !admin : sessionProject() !== null);
  $("nav").hidden = !signedIn;
  $("sign-out").hidden = !signedIn;
  $("nav-overview").hidden = !usage;
  $("nav-requests").hidden = !usage;
  $("nav-keys").hidden = !(signedIn && managesKeys());
  $("nav-audit").hidden = !admin;
  $("nav-keys").classList.toggle("active", section === "keys");
  $("nav-audit").classList.toggle("active", section === "audit");
  if (section !== "keys") keys.forget();
  $("nav-overview").classList.toggle("active", section === "overview");
  $("nav-requests").classList.toggle("active", section === "requests" || section === "request");
}

function failed(error) {
  if (error instanceof SignedOut) {
    sessionStorage.clear();
    showSignIn(error.message);
  }
}

function showSignIn(message) {
  stopFollowing();
  $("project").textContent = "";
  $("sign-in-error").textContent = message ?? "";
  $("oidc-sign-in").hidden = !oidcOn();
  show("sign-in");
  $("key").focus();
}

function delta(now, before, worse) {
  if (now == null || before == null) return el("div", "no earlier figure", "delta");
  if (before === 0) return el("div", now === 0 ? "same as previous range" : "none in previous range", "delta");
  const change = (now - before) / Math.abs(before);
  const text = `${change >= 0 ? "+" : ""}${(change * 100).toFixed(1)}% vs previous range`;
  const bad = worse ? change > 0 : change < 0;
  return el("div", text, "delta" + (change === 0 ? "" : bad ? " up" : " down"));
}

function tiles(total, previous) {
  $("totals").replaceChildren(...TILES.map(([field, label, value, format, worse]) => {
    const tile = el("div", null, "tile");
    const v = el("div", format(value(total)), "value");
    v.dataset.field = field;
    v.dataset.value = value(total) == null ? "" : String(value(total));
    tile.append(el("div", label, "label"), v, delta(value(total), value(previous), worse));
    return tile;
  }));
}

async function overview() {
  if (loading) return;
  loading = true;
  const range = rangeOf($("range").value);
  try {
    const [stats, previous, total, previousTotal] = await Promise.all([
      post("/usage/stats", { start_time_us: range.start, end_time_us: range.end, bucket: range.bucket }),
      post("/usage/stats", { start_time_us: range.start - range.length, end_time_us: range.start, bucket: range.bucket }),
      post("/usage/total", { start_time_us: range.start, end_time_us: range.end }),
      post("/usage/total", { start_time_us: range.start - range.length, end_time_us: range.start }),
    ]);
    $("overview-error").textContent = "";
    $("project").textContent = `project ${stats.project}`;
    const section = $("overview");
    section.dataset.start = String(stats.period_start);
    section.dataset.end = String(stats.period_end);
    section.dataset.bucket = stats.bucket;
    tiles({ ...stats.total, batch: total.batch }, { ...previous.total, batch: previousTotal.batch });
    // Axis ticks in three significant digits; the legend shows the exact figure.
    stacked($("chart-cost"), stats, (row) => row.cost, usd, (v) => "$" + Number(v.toPrecision(3)));
    stacked($("chart-tokens"), stats, (row) => row.input_tokens + row.output_tokens, count);
    lines($("chart-requests"), stats, [
      ["Requests", (b) => b.requests, "#2457c5", 0],
      ["Errors", (b) => b.errors, "#b42318", 0],
    ], count);
    lines($("chart-latency"), stats, [
      ["Average latency", (b) => b.latency_us_avg / 1000, "#2a9d8f", null],
      ["Average TTFT", (b) => (b.ttft_us_avg == null ? null : b.ttft_us_avg / 1000), "#e07b39", null],
    ], (v) => ms(v * 1000));
    breakdowns.provider.show(stats.by_provider);
    breakdowns.model.show(stats.by_model);
    breakdowns.user.show(stats.by_user);
    breakdowns.tag.show(stats.by_tag);
    $("updated").textContent = `updated ${new Date().toLocaleTimeString("en-GB")}`;
    section.dataset.loaded = String(Number(section.dataset.loaded ?? 0) + 1);
  } catch (error) {
    $("overview-error").textContent = error.message;
    failed(error);
  } finally {
    loading = false;
  }
}

function stopFollowing() {
  clearInterval(timer);
  timer = null;
}

function follow() {
  stopFollowing();
  if ($("follow").checked && !$("overview").hidden) timer = setInterval(overview, FOLLOW_EVERY_MS);
}

async function route() {
  if (!key() && !current()) return showSignIn();
  const hash = location.hash;
  const session = current();
  if (session && !key()) {
    const who = session.name ?? session.subject;
    $("project").textContent = isAdmin() ? `${who} · admin` : `${who} · project ${sessionProject()}`;
    $("keys-note").textContent = isAdmin()
      ? "Signed in as an admin: the keys of every project."
      : "Signed in as a project admin: the keys of the projects you manage.";
    if (hash === "#/audit" && isAdmin()) {
      stopFollowing();
      show("audit");
      return audit.load(true, failed);
    }
    if (hash === "#/keys" || sessionProject() === null) {
      stopFollowing();
      show("keys");
      return keys.load(failed);
    }
  } else if (isAdmin()) {
    // An admin key has no project: whatever the address, it sees the Keys view (which says why).
    stopFollowing();
    $("project").textContent = "admin";
    if (hash === "#/audit") {
      show("audit");
      return audit.load(true, failed);
    }
    show("keys");
    return keys.load(failed);
  }
  if (hash.startsWith("#/request/")) {
    stopFollowing();
    show("request");
    let id;
    try {
      id = decodeURIComponent(hash.slice("#/request/".length));
    } catch {
      id = "";
    }
    return log.open(id, failed);
  }
  if (hash === "#/requests") {
    stopFollowing();
    show("requests");
    return log.load(true, failed);
  }
  show("overview");
  follow();
  return overview();
}

$("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const candidate = $("key").value.trim();
  $("sign-in-error").textContent = "";
  try {
    await signIn(candidate);
    $("key").value = "";
    route();
  } catch (error) {
    $("sign-in-error").textContent = error instanceof SignedOut
      ? "This key was refused: it is not a valid gateway key (unknown or revoked)."
      : error.message;
  }
});
$("sign-out").addEventListener("click", async () => {
  await signOut();
  location.hash = "";
  showSignIn("Signed out.");
});
$("audit-filters").addEventListener("submit", (event) => {
  event.preventDefault();
  audit.load(true, failed);
});
$("audit-more").addEventListener("click", () => audit.load(false, failed));
$("range").addEventListener("change", overview);
$("follow").addEventListener("change", follow);
$("refresh").addEventListener("click", overview);
$("log-filters").addEventListener("submit", (event) => {
  event.preventDefault();
  log.load(true, failed);
});
$("keys-refresh").addEventListener("click", () => keys.load(failed));
$("keys-project").addEventListener("change", () => keys.load(failed));
$("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  keys.submit(failed);
});
$("key-cancel").addEventListener("click", keys.stopEditing);
$("new-key-copy").addEventListener("click", keys.copy);
$("more").addEventListener("click", () => log.load(false, failed));
$("find").addEventListener("click", () => {
  const id = $("find-id").value.trim();
  if (id) location.hash = "#/request/" + encodeURIComponent(id);
});
for (const button of document.querySelectorAll("[data-csv]")) {
  button.addEventListener("click", () => breakdowns[button.dataset.csv].download());
}
window.addEventListener("hashchange", route);
window.addEventListener("resize", resize);
// Whether a session exists (and whether sign-in by OIDC is offered) is asked once per load.
loadSession().then(route);
