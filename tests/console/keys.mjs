// The console's Keys view in headless Chromium (Debian's), driven by playwright-core; run by
// tests/console.rs against the real binary. The table is compared with GET /admin/keys asked
// from Node, a key is created with a budget, models and MCP tool patterns through the page,
// changed, then revoked; a project's key sees no Keys view, and its request log narrowed to
// MCP tool calls (and to one tool) equals the API's.
//
// Environment (set by the Rust test): CONSOLE_URL, CONSOLE_ADMIN_KEY, CONSOLE_KEY (a project's
// key), CONSOLE_SCREENSHOTS, CONSOLE_CHROMIUM, CONSOLE_PLAYWRIGHT.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = env("CONSOLE_URL").replace(/\/$/, "");
const adminKey = env("CONSOLE_ADMIN_KEY");
const projectKey = env("CONSOLE_KEY");
const shots = env("CONSOLE_SCREENSHOTS");
const require = createRequire(join(env("CONSOLE_PLAYWRIGHT"), "package.json"));
const { chromium } = require("playwright-core");
const origin = new URL(base).origin;
const STEP_MS = 15_000;

async function keys() {
  const response = await fetch(base + "/admin/keys", { headers: { Authorization: `Bearer ${adminKey}` } });
  assert.equal(response.status, 200);
  return (await response.json()).data;
}

const step = (name) => console.log(`keys: ${name}`);

// The project's request log as the API answers it.
async function usage(query) {
  const response = await fetch(base + "/usage/requests", {
    method: "POST",
    headers: { Authorization: `Bearer ${projectKey}`, "Content-Type": "application/json" },
    body: JSON.stringify(query),
  });
  assert.equal(response.status, 200);
  return response.json();
}

// The tools `key` is shown by /mcp (initialize, then tools/list).
async function toolsOf(key) {
  const post = async (body, session) => {
    const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
    if (session) headers["Mcp-Session-Id"] = session;
    const response = await fetch(base + "/mcp", { method: "POST", headers, body: JSON.stringify(body) });
    assert.equal(response.status, 200);
    return { session: response.headers.get("mcp-session-id"), body: await response.json() };
  };
  const init = await post({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "console-test", version: "1" } } });
  const list = await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, init.session);
  return list.body.result.tools.map((t) => t.name).sort();
}

// The table as the page shows it: per row id, each cell's field to its raw value and text.
async function table(page) {
  return page.$$eval("#keys-table tbody tr", (rows) => rows.map((tr) => ({
    id: tr.dataset.id,
    state: tr.dataset.state,
    cells: Object.fromEntries([...tr.querySelectorAll("td[data-field]")].map((td) => [td.dataset.field, { value: td.dataset.value, text: td.textContent }])),
  })));
}

// What the page must show for a key of GET /admin/keys, raw values as `data-value` strings.
function expected(k) {
  const s = (v) => (v == null ? "" : String(v));
  return {
    id: k.id,
    state: k.state,
    values: {
      name: s(k.name), project: k.project, prefix: k.prefix, models: k.models.join(", "),
      tools: (k.tools ?? []).join(", "),
      expires_at: s(k.expires_at), rpm: s(k.rpm), tpm: s(k.tpm), budget: s(k.budget?.usd),
      period: s(k.budget?.period), spend: s(k.spend?.usd), state: k.state,
    },
  };
}

function sameAsApi(shown, listed) {
  const got = shown.map((r) => ({
    id: r.id,
    state: r.state,
    values: Object.fromEntries(Object.entries(r.cells).map(([f, c]) => [f, c.value])),
  }));
  assert.deepEqual(got, listed.map(expected));
}

async function loads(page, n) {
  await page.waitForFunction((n) => Number(document.getElementById("keys-table").dataset.loaded ?? 0) >= n, n);
}

const browser = await chromium.launch({
  executablePath: env("CONSOLE_CHROMIUM"),
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  timeout: 60_000,
});
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  context.setDefaultTimeout(STEP_MS);
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  page.on("request", (r) => requests.push(r.url()));
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));

  // An admin key: the Keys view, which says why there is no usage view; the table equals the API.
  await page.goto(base + "/ui/");
  await page.waitForSelector("#sign-in:not([hidden])");
  await page.fill("#key", adminKey);
  await page.click("#sign-in-form button[type=submit]");
  await page.waitForSelector("#keys:not([hidden])");
  await loads(page, 1);
  assert.ok(await page.isVisible("#nav-keys"));
  assert.ok(!(await page.isVisible("#nav-overview")) && !(await page.isVisible("#nav-requests")));
  assert.match(await page.textContent("#keys-note"), /usage views .* need a project's key/s);
  const before = await keys();
  assert.ok(before.length >= 2, "the test made keys in two projects");
  assert.ok(new Set(before.map((k) => k.project)).size >= 2);
  sameAsApi(await table(page), before);
  // A hostile name is shown as text, never run as markup.
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.ok((await table(page)).some((r) => r.cells.name.text.includes("<img")));
  // The usage views' addresses lead back to Keys for an admin key.
  await page.goto(base + "/ui/#/overview");
  await page.waitForSelector("#keys:not([hidden])");
  assert.ok(await page.isHidden("#overview"));
  step("admin sign-in: the table equals GET /admin/keys, no usage view");

  // Create a key with a budget and models through the page: the secret shown once.
  const loaded = Number(await page.getAttribute("#keys-table", "data-loaded"));
  await page.fill("#k-project", "made-in-page");
  await page.fill("#k-name", "from the console");
  await page.fill("#k-models", "echo/echo-1, openai/gpt-4o*");
  await page.fill("#k-tools", "files/add, search/*");
  await page.fill("#k-rpm", "30");
  await page.fill("#k-budget", "2.5");
  await page.selectOption("#k-period", "month");
  await page.click("#key-submit");
  await loads(page, loaded + 1);
  await page.waitForSelector("#new-key:not([hidden])");
  const secret = await page.textContent("#new-key-secret");
  assert.match(secret, /^wg/);
  assert.match(await page.textContent("#new-key"), /shown this once/);
  const after = await keys();
  const made = after.find((k) => k.project === "made-in-page");
  assert.ok(made, "the key is listed by the API");
  assert.deepEqual(made.models, ["echo/echo-1", "openai/gpt-4o*"]);
  assert.deepEqual(made.tools, ["files/add", "search/*"]);
  assert.deepEqual(made.budget, { usd: 2.5, period: "month" });
  assert.equal(made.rpm, 30);
  assert.equal(made.name, "from the console");
  assert.ok(secret.startsWith(made.prefix), "the shown secret is this key's");
  sameAsApi(await table(page), after);
  // The secret works as a key of its project, for its models only.
  const models = await fetch(base + "/v1/models", { headers: { Authorization: `Bearer ${secret}` } });
  assert.equal(models.status, 200);
  assert.deepEqual((await models.json()).data.map((m) => m.id).sort(), ["echo/echo-1"]);
  // It may call `files/add` and no other tool of `files`.
  assert.deepEqual(await toolsOf(secret), ["files_add"]);
  step("a key created through the page, listed with its budget, models and tools");

  // Change its limits: rpm cleared, tpm set, its tools narrowed to none of `files`.
  const row = `#keys-table tr[data-id="${made.id}"]`;
  await page.click(`${row} button[data-action=edit]`);
  assert.equal(await page.inputValue("#k-rpm"), "30");
  assert.equal(await page.inputValue("#k-tools"), "files/add, search/*");
  await page.fill("#k-tools", "search/*");
  await page.fill("#k-rpm", "");
  await page.fill("#k-tpm", "9000");
  const beforeSave = Number(await page.getAttribute("#keys-table", "data-loaded"));
  await page.click("#key-submit");
  await loads(page, beforeSave + 1);
  const changed = (await keys()).find((k) => k.id === made.id);
  assert.equal(changed.rpm, null);
  assert.equal(changed.tpm, 9000);
  assert.deepEqual(changed.budget, { usd: 2.5, period: "month" });
  assert.deepEqual(changed.tools, ["search/*"]);
  assert.equal(await page.textContent(`${row} td[data-field=tools]`), "search/*");
  assert.equal(await page.textContent(`${row} td[data-field=tpm]`), "9000");
  await page.screenshot({ path: join(shots, "keys.png"), fullPage: true });
  step("its limits changed through the page");

  // Revoke it: two clicks, then listed as revoked, with no buttons.
  await page.click(`${row} button[data-action=revoke]`);
  const beforeRevoke = Number(await page.getAttribute("#keys-table", "data-loaded"));
  await page.click(`${row} button[data-action=confirm]`);
  await loads(page, beforeRevoke + 1);
  assert.equal(await page.getAttribute(row, "data-state"), "revoked");
  assert.equal(await page.textContent(`${row} td[data-field=state]`), "revoked");
  assert.equal(await page.$$eval(`${row} button`, (b) => b.length), 0);
  sameAsApi(await table(page), await keys());
  // Gateways cache keys for up to 5 s (the manual: docs/src/limits-and-keys.md, "API keys and projects").
  let status = 0;
  for (let i = 0; i < 40 && status !== 401; i++) {
    if (i > 0) await new Promise((done) => setTimeout(done, 250));
    status = (await fetch(base + "/v1/models", { headers: { Authorization: `Bearer ${secret}` } })).status;
  }
  assert.equal(status, 401, "the revoked key is refused within 10 s");
  step("revoked through the page, and refused by the gateway");

  // Signing out forgets the secret; a project's key sees no Keys view.
  await page.click("#sign-out");
  await page.waitForSelector("#sign-in:not([hidden])");
  assert.equal(await page.textContent("#new-key-secret"), "");
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  await page.fill("#key", projectKey);
  await page.click("#sign-in-form button[type=submit]");
  await page.waitForSelector("#overview:not([hidden])");
  assert.ok(await page.isHidden("#nav-keys"));
  await page.goto(base + "/ui/#/keys");
  await page.waitForSelector("#overview:not([hidden])");
  assert.ok(await page.isHidden("#keys"));
  assert.equal(await page.$$eval("#keys-table tbody tr", (r) => r.length), 0);
  step("a project's key: no Keys view");

  // Its request log, narrowed to MCP tool calls, then to one tool: as the API answers.
  await page.click("#nav-requests");
  await page.waitForSelector("#log[data-loaded]");
  const ids = () => page.$$eval("#log tbody tr", (trs) => trs.map((tr) => tr.dataset.requestId));
  const all = (await ids()).length;
  for (const [fill, filter, n] of [
    [async () => page.selectOption("#f-dialect", "mcp"), { dialect: "mcp" }, 2],
    [async () => page.fill("#f-model", "pid"), { dialect: "mcp", model: "pid" }, 1],
  ]) {
    await fill();
    await page.click("#log-filters button[type=submit]");
    await page.waitForSelector("#log[data-loaded]");
    const range = await page.evaluate(() => ({ ...document.getElementById("log").dataset }));
    const answer = await usage({ start_time_us: Number(range.start), end_time_us: Number(range.end), limit: 50, ...filter });
    assert.deepEqual(await ids(), answer.data.map((r) => r.request_id), JSON.stringify(filter));
    assert.equal(answer.data.length, n, JSON.stringify(answer.data));
    assert.ok(answer.data.every((r) => r.provider === "files" && r.dialect === "mcp"));
  }
  assert.ok(all > 2, "the log held other requests before the filter");
  assert.deepEqual(await page.$$eval("#log tbody tr td:nth-child(4)", (tds) => tds.map((td) => td.textContent)), ["files"]);
  step("the request log narrowed to MCP tool calls, then to one tool");

  const elsewhere = requests.filter((u) => new URL(u).origin !== origin);
  assert.deepEqual(elsewhere, [], "requests to another origin");
  assert.ok(!requests.some((u) => u.includes(secret)), "the secret never in a URL");
  assert.deepEqual(errors, [], "console errors");
  step(`${requests.length} requests, all to ${origin}; no console error`);
  console.log("keys: all checks passed");
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
