// Sign-in through the identity provider in headless Chromium: run by tests/console.rs against
// an in-process gateway whose `console.oidc` trusts the local provider of tests/common/oidc.rs.
// The provider knows the gateway as http://gateway.test (a name Chromium resolves to the
// gateway's port, as a load balancer's would be), signs in an admin at once, and sends the
// browser back; the page then creates a key with the session (its CSRF token sent by the page),
// finds that change in the Audit view under the OIDC subject, narrows the log by actor and
// action, and signs out.
//
// Environment: CONSOLE_URL, CONSOLE_RESOLVE (Chromium's --host-resolver-rules), CONSOLE_IDP
// (the provider's origin), CONSOLE_SUBJECT, CONSOLE_SCREENSHOTS, CONSOLE_CHROMIUM,
// CONSOLE_PLAYWRIGHT.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = env("CONSOLE_URL").replace(/\/$/, "");
const subject = env("CONSOLE_SUBJECT");
const idp = env("CONSOLE_IDP");
const shots = env("CONSOLE_SCREENSHOTS");
const require = createRequire(join(env("CONSOLE_PLAYWRIGHT"), "package.json"));
const { chromium } = require("playwright-core");
const origin = new URL(base).origin;

const step = (name) => console.log(`oidc: ${name}`);

const browser = await chromium.launch({
  executablePath: env("CONSOLE_CHROMIUM"),
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    `--host-resolver-rules=${env("CONSOLE_RESOLVE")}`,
  ],
  timeout: 60_000,
});
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  context.setDefaultTimeout(15_000);
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    // http://gateway.test is not a trustworthy origin (127.0.0.1 and HTTPS are), so Chromium
    // says it ignores the console's Cross-Origin-Opener-Policy; a deployment serves HTTPS.
    if (/Cross-Origin-Opener-Policy header has been ignored/.test(m.text())) return;
    errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  page.on("request", (r) => requests.push(r.url()));

  await page.goto(base + "/ui/");
  await page.waitForSelector("#sign-in:not([hidden])");
  await page.waitForSelector("#oidc-sign-in:not([hidden])");
  step("the sign-in page offers the identity provider");

  // Through the provider and back: no form there, it signs the admin in at once.
  await page.click("#oidc-link");
  await page.waitForURL(base + "/ui/");
  await page.waitForSelector("#nav-audit:not([hidden])");
  assert.match(await page.textContent("#project"), /admin/);
  assert.ok(requests.some((u) => u.startsWith(idp + "/authorize?")), "the provider was visited");
  // The session cookie is HttpOnly: the page's scripts cannot read it.
  assert.ok(!(await page.evaluate(() => document.cookie)).includes("wasmgate_session"));
  const cookies = await context.cookies(base);
  const session = cookies.find((c) => c.name === "wasmgate_session");
  assert.ok(session && session.httpOnly && session.sameSite === "Lax", JSON.stringify(cookies));
  step("signed in through the provider; the session cookie is HttpOnly, SameSite=Lax");

  // A change made with the session: the page sends its CSRF token.
  await page.click("#nav-keys");
  await page.waitForSelector("#keys:not([hidden])");
  await page.fill("#k-project", "made-by-sso");
  await page.fill("#k-name", "from the console");
  await page.click("#key-submit");
  await page.waitForSelector("#new-key:not([hidden])");
  step("a key created with the session");

  const loaded = (n) =>
    page.waitForFunction((n) => Number(document.getElementById("audit-table").dataset.loaded ?? 0) >= n, n);
  const rows = () =>
    page.$$eval("#audit-table tbody tr", (trs) =>
      trs.map((tr) => Object.fromEntries([...tr.cells].map((td) => [td.dataset.field, td.textContent]))));
  await page.click("#nav-audit");
  await page.waitForSelector("#audit:not([hidden])");
  await loaded(1);
  let shown = await rows();
  const mine = shown.filter((r) => r.actor === `oidc:${subject}`);
  assert.equal(mine.length, 1, JSON.stringify(shown));
  assert.equal(mine[0].action, "key.create");
  assert.equal(mine[0].origin, "console");
  assert.match(mine[0].after, /made-by-sso/);
  assert.ok(shown.some((r) => r.actor.startsWith("admin:")), "the admin key's change is listed too");
  await page.screenshot({ path: join(shots, "oidc-audit.png"), fullPage: true });
  step(`the Audit view lists ${shown.length} entries, the session's under oidc:${subject}`);

  await page.fill("#a-actor", `oidc:${subject}`);
  await page.selectOption("#a-action", "key.create");
  await page.click("#audit-filters button[type=submit]");
  await loaded(2);
  shown = await rows();
  assert.equal(shown.length, 1, JSON.stringify(shown));
  await page.fill("#a-actor", `oidc:${subject}`);
  await page.selectOption("#a-action", "key.revoke");
  await page.click("#audit-filters button[type=submit]");
  await loaded(3);
  assert.equal((await rows()).length, 0);
  assert.equal(await page.textContent("#audit-count"), "0 entries");
  step("the log narrowed by actor and action");

  await page.click("#sign-out");
  await page.waitForSelector("#sign-in:not([hidden])");
  const after = await page.evaluate(() => fetch("/console/session").then((r) => r.json()));
  assert.equal(after.session, null);
  step("signed out: the session is gone");

  const elsewhere = requests.filter((u) => ![origin, idp].includes(new URL(u).origin));
  assert.deepEqual(elsewhere, [], "requests to a third origin");
  assert.deepEqual(errors, [], "console errors");
  console.log("oidc: all checks passed");
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
