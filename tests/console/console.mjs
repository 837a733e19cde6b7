// The console in headless Chromium (Debian's), driven by playwright-core; run by
// tests/console.rs against the real binary, whose ledger it filled. Every figure on the page is
// compared with what this script asks the usage API itself (from Node, not through the page).
//
// Environment (set by the Rust test): CONSOLE_URL, CONSOLE_KEY, CONSOLE_REQUESTS (records of the
// key's project), CONSOLE_SCREENSHOTS, CONSOLE_CHROMIUM, CONSOLE_PLAYWRIGHT (where
// scripts/console-browser.sh installed playwright-core).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = env("CONSOLE_URL").replace(/\/$/, "");
const key = env("CONSOLE_KEY");
let sent = Number(env("CONSOLE_REQUESTS"));
const shots = env("CONSOLE_SCREENSHOTS");
const require = createRequire(join(env("CONSOLE_PLAYWRIGHT"), "package.json"));
const { chromium } = require("playwright-core");
const origin = new URL(base).origin;
const STEP_MS = 15_000;

async function api(method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.equal(response.status, 200, `${method} ${path}`);
  return response.json();
}

const step = (name) => console.log(`console: ${name}`);

const browser = await chromium.launch({
  executablePath: env("CONSOLE_CHROMIUM"),
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  timeout: 60_000,
});
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, acceptDownloads: true });
  context.setDefaultTimeout(STEP_MS);
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  // The one error expected: the browser's own line for the 401 a wrong key gets.
  let expect401 = false;
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    if (expect401 && /status of 401/.test(m.text())) return;
    errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  page.on("request", (r) => requests.push(r.url()));
  page.on("requestfailed", (r) => {
    if (!r.url().startsWith("blob:")) errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });

  // Sign-in: a wrong key is refused with a message, and nothing is kept.
  await page.goto(base + "/ui");
  assert.equal(new URL(page.url()).pathname, "/ui/");
  await page.waitForSelector("#sign-in:not([hidden])");
  expect401 = true;
  await page.fill("#key", "wg-not-a-real-key");
  await page.click("#sign-in-form button[type=submit]");
  await page.waitForFunction(() => document.getElementById("sign-in-error").textContent.length > 0);
  const refused = await page.textContent("#sign-in-error");
  assert.match(refused, /refused/i);
  assert.equal(await page.isVisible("#overview"), false);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  await page.screenshot({ path: join(shots, "sign-in-refused.png") });
  expect401 = false;
  step("a wrong key is refused");

  await page.fill("#key", key);
  await page.click("#sign-in-form button[type=submit]");
  await page.waitForSelector("#overview[data-loaded]");
  await page.waitForSelector("#by-user table");
  step("signed in");

  // Totals, for the very range the page asked for.
  const range = await page.evaluate(() => ({ ...document.getElementById("overview").dataset }));
  const stats = await api("POST", "/usage/stats", {
    start_time_us: Number(range.start), end_time_us: Number(range.end), bucket: range.bucket,
  });
  assert.equal(stats.total.requests, sent, "every request of the project, no other project's");
  assert.ok(stats.total.errors >= 3 && stats.total.ttft_us.p50 > 0 && stats.total.cost > 0, JSON.stringify(stats.total));
  const total = await api("POST", "/usage/total", { start_time_us: Number(range.start), end_time_us: Number(range.end) });
  assert.equal(stats.total.cost, total.total.total_cost);
  assert.equal(stats.total.input_tokens, total.total.total_input_tokens);
  const tiles = await page.$$eval("#totals .value", (nodes) => nodes.map((n) => [n.dataset.field, n.dataset.value, n.textContent]));
  const want = {
    cost: stats.total.cost, requests: stats.total.requests, input_tokens: stats.total.input_tokens,
    output_tokens: stats.total.output_tokens, cached_input_tokens: stats.total.cached_input_tokens,
    error_rate: stats.total.error_rate,
    cache_hits: stats.total.cache_hits, cache_hit_rate: stats.total.cache_hit_rate, saved_cost: stats.total.saved_cost,
    batch_cost: total.batch.cost, batch_requests: total.batch.requests,
    latency_p50: stats.total.latency_us.p50, latency_p90: stats.total.latency_us.p90, latency_p99: stats.total.latency_us.p99,
    ttft_p50: stats.total.ttft_us.p50, ttft_p90: stats.total.ttft_us.p90, ttft_p99: stats.total.ttft_us.p99,
  };
  assert.deepEqual(Object.fromEntries(tiles.map(([f, v]) => [f, Number(v)])), want);
  const shown = Object.fromEntries(tiles.map(([f, , text]) => [f, text]));
  assert.equal(shown.requests, sent.toLocaleString("en-US"));
  assert.equal(shown.cost, "$" + stats.total.cost.toFixed(stats.total.cost < 1 ? 6 : 2));
  assert.equal(shown.error_rate, (stats.total.error_rate * 100).toFixed(2) + "%");
  // The repeated gpt-4o-mini requests were answered from the cache: hits, their rate and savings.
  assert.ok(stats.total.cache_hits > 0 && stats.total.saved_cost > 0, JSON.stringify(stats.total));
  assert.equal(total.cache.hits, stats.total.cache_hits);
  assert.equal(total.cache.saved_cost, stats.total.saved_cost);
  assert.equal(shown.cache_hit_rate, (stats.total.cache_hit_rate * 100).toFixed(2) + "%");
  const mini = stats.by_model.rows.find((r) => r.model === "gpt-4o-mini");
  assert.ok(mini.cache_hits === stats.total.cache_hits && mini.saved_cost > 0, JSON.stringify(mini));
  // The batch's lines, at the batch price, shown apart.
  const batchLines = Number(process.env.CONSOLE_BATCH_LINES);
  assert.ok(batchLines > 0 && total.batch.requests === batchLines && total.batch.cost > 0, JSON.stringify(total.batch));
  assert.equal(shown.batch_requests, String(batchLines));
  assert.equal(shown.batch_cost, "$" + total.batch.cost.toFixed(6));
  step(`totals equal the API's (${sent} requests, $${stats.total.cost}, ${stats.total.errors} errors, ${stats.total.cache_hits} cache hits, ${batchLines} batch lines)`);

  // Breakdowns: every row and figure, and sorting.
  for (const [kind, rows] of [["provider", stats.by_provider], ["model", stats.by_model], ["user", stats.by_user], ["tag", stats.by_tag]]) {
    const table = await page.$$eval(`table[data-breakdown=${kind}] tbody tr`, (trs) =>
      trs.map((tr) => Object.fromEntries([...tr.cells].map((td) => [td.dataset.field, td.dataset.value]))));
    const asText = (row) => Object.fromEntries(Object.entries(row).filter(([k]) => k in table[0]).map(([k, v]) => [k, v == null ? "" : String(v)]));
    assert.deepEqual(table, rows.rows.map(asText), kind);
    assert.ok(table.length > 0, kind);
  }
  // Three providers, and a row for the requests a guard refused before any provider was chosen.
  const named = stats.by_provider.rows.filter((r) => r.provider).map((r) => r.provider).sort();
  assert.ok(stats.by_model.rows.length >= 4, JSON.stringify(stats.by_model.rows));
  assert.deepEqual(named, ["batchy", "echo", "openai"], JSON.stringify(stats.by_provider.rows));
  assert.equal(stats.by_provider.rows.length, 4, JSON.stringify(stats.by_provider.rows));
  await page.click("table[data-breakdown=model] th[data-key=requests]");
  const byRequests = await page.$$eval("table[data-breakdown=model] tbody td[data-field=requests]", (tds) => tds.map((td) => Number(td.dataset.value)));
  assert.deepEqual(byRequests, [...byRequests].sort((a, b) => b - a));
  await page.click("table[data-breakdown=model] th[data-key=requests]");
  const ascending = await page.$$eval("table[data-breakdown=model] tbody td[data-field=requests]", (tds) => tds.map((td) => Number(td.dataset.value)));
  assert.deepEqual(ascending, [...byRequests].reverse());
  step("breakdowns equal the API's, and sort");

  // Hostile strings are text: no element made of them, no script run.
  const hostile = await page.$$eval("table[data-breakdown=user] td[data-field=user_id]", (tds) => tds.map((td) => td.textContent));
  assert.ok(hostile.includes('<img src=x onerror="window.__pwned=1">'), hostile.join("|"));
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.$$eval("main img", (imgs) => imgs.length), 0);

  // CSV: a tag a spreadsheet would run as a formula is written as text.
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("[data-csv=tag]")]);
  const csv = readFileSync(await download.path(), "utf8");
  assert.match(csv, /^"tag","requests",/);
  assert.ok(csv.includes(`"'=HYPERLINK(""http://evil.example"",""x"")"`), csv);
  assert.ok(csv.includes(`"'+1-2"`), csv);
  assert.ok(!/(^|,)"[=+\-@]/m.test(csv), csv);
  step("hostile strings shown as text; CSV cells neutralised");

  // Charts: drawn, with data points, on canvases that hold pixels.
  for (const id of ["chart-cost", "chart-tokens", "chart-requests", "chart-latency"]) {
    const points = Number(await page.getAttribute(`#${id}`, "data-points"));
    assert.ok(points > 0, `${id} has data points`);
    const painted = await page.$eval(`#${id} canvas`, (canvas) => {
      const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) n++;
      return n;
    });
    assert.ok(painted > 500, `${id} painted ${painted} pixels`);
  }
  const perBucket = stats.buckets.reduce((n, b) => n + b.requests, 0);
  assert.equal(perBucket, sent);
  await page.screenshot({ path: join(shots, "overview.png"), fullPage: true });
  step("charts drawn with data points");

  // Following new traffic: a request sent now shows up at the next poll, without a click.
  const chat = await fetch(base + "/v1/chat/completions", {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({ model: "echo-1", messages: [{ role: "user", content: "one more" }] }),
  });
  assert.equal(chat.status, 200);
  await chat.arrayBuffer();
  sent += 1;
  await page.waitForFunction(
    (n) => document.querySelector("#totals [data-field=requests]")?.dataset.value === String(n),
    sent,
    { timeout: 30_000 },
  );
  step("the overview followed a new request");

  // The request log: the API's first page for the same range, then narrowed by filters.
  await page.click("#nav-requests");
  await page.waitForSelector("#log[data-loaded]");
  const logRange = await page.evaluate(() => ({ ...document.getElementById("log").dataset }));
  const ids = () => page.$$eval("#log tbody tr", (trs) => trs.map((tr) => tr.dataset.requestId));
  const first = await api("POST", "/usage/requests", { start_time_us: Number(logRange.start), end_time_us: Number(logRange.end), limit: 50 });
  assert.deepEqual(await ids(), first.data.map((r) => r.request_id));
  assert.equal((await ids()).length, Math.min(sent, 50));
  for (const [fill, filter] of [
    [async () => page.fill("#f-model", "echo-1"), { model: "echo-1" }],
    [async () => { await page.fill("#f-model", ""); await page.selectOption("#f-status", "error"); }, { status: "error" }],
    [async () => { await page.selectOption("#f-status", ""); await page.fill("#f-user", "bob"); }, { user_id: "bob" }],
    [async () => { await page.fill("#f-user", ""); await page.fill("#f-tag", "eu"); }, { user_tags: ["eu"] }],
    [async () => { await page.fill("#f-tag", ""); await page.selectOption("#f-guard-action", "refuse"); }, { guard_action: "refuse" }],
    [async () => { await page.selectOption("#f-guard-action", ""); await page.fill("#f-guard", "no-falcon"); await page.fill("#f-model", "echo-1"); }, { guard: "no-falcon", model: "echo-1" }],
  ]) {
    await fill();
    await page.click("#log-filters button[type=submit]");
    await page.waitForSelector("#log[data-loaded]");
    const narrowed = await page.evaluate(() => ({ ...document.getElementById("log").dataset }));
    const answer = await api("POST", "/usage/requests", { start_time_us: Number(narrowed.start), end_time_us: Number(narrowed.end), limit: 50, ...filter });
    const got = await ids();
    assert.deepEqual(got, answer.data.map((r) => r.request_id), JSON.stringify(filter));
    assert.ok(got.length > 0 && got.length < sent, `${JSON.stringify(filter)} narrows the log to ${got.length}`);
  }
  await page.fill("#f-guard", "");
  await page.fill("#f-model", "");
  // Each refused request shows its verdict, never the words that were refused.
  await page.selectOption("#f-guard-action", "refuse");
  await page.click("#log-filters button[type=submit]");
  await page.waitForSelector("#log[data-loaded]");
  const guardRefused = await ids();
  assert.equal(guardRefused.length, 2, "the two refused requests");
  await page.click(`#log tbody tr[data-request-id="${guardRefused[0]}"] a`);
  await page.waitForSelector(`#request-fields[data-request-id="${guardRefused[0]}"]`);
  const verdict = await page.textContent('#request-fields dd[data-field="Guards"]');
  assert.equal(verdict, "no-falcon request refuse (denied 1)");
  await page.click("#nav-requests");
  await page.waitForSelector("#log[data-loaded]");
  await page.selectOption("#f-guard-action", "");
  await page.selectOption("#f-status", "error");
  await page.click("#log-filters button[type=submit]");
  await page.waitForSelector("#log[data-loaded]");
  await page.screenshot({ path: join(shots, "requests.png"), fullPage: true });
  step("the log equals the API's pages, and filters narrow it");

  // One request by id, every field from GET /usage/requests/{id}.
  const id = (await ids())[0];
  await page.click(`#log tbody tr[data-request-id="${id}"] a`);
  await page.waitForSelector(`#request-fields[data-request-id="${id}"]`);
  const record = await api("GET", "/usage/requests/" + encodeURIComponent(id));
  const fields = await page.$$eval("#request-fields dd", (dds) => Object.fromEntries(dds.map((dd) => [dd.dataset.field, dd.textContent])));
  assert.equal(fields["Request id"], record.request_id);
  assert.equal(fields["Status"], String(record.status));
  assert.ok(record.status >= 400);
  assert.equal(fields["Error"], record.error_type);
  assert.equal(fields["Model"], record.model);
  assert.equal(fields["User id"], record.user.id ?? "–");
  assert.equal(fields["Input tokens"], record.input_tokens.toLocaleString("en-US"));
  await page.screenshot({ path: join(shots, "request.png"), fullPage: true });
  // An unknown id: said so, not an error of the page.
  await page.click("#nav-requests");
  await page.waitForSelector("#log[data-loaded]");
  await page.fill("#find-id", "no-such-request");
  await page.click("#find");
  await page.waitForSelector("#request-fields .error");
  assert.match(await page.textContent("#request-fields"), /No request of this project has this id/);
  step("one request opened by id");

  // Every request the page made went to the gateway's own origin.
  assert.ok(requests.length > 10);
  const elsewhere = requests.filter((u) => new URL(u).origin !== origin);
  assert.deepEqual(elsewhere, [], "requests to another origin");
  // The 404 above is the one expected browser line; anything else is a failure.
  const notFound = errors.filter((e) => /status of 404/.test(e));
  assert.ok(notFound.length <= 1, notFound.join("\n"));
  assert.deepEqual(errors.filter((e) => !/status of 404/.test(e)), [], "console errors");
  step(`${requests.length} requests, all to ${origin}; no console error`);
  console.log("console: all checks passed");
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
