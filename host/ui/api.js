// The gateway's own APIs, with the key the user signed in with (kept in this tab's
// sessionStorage), or with the session of a sign-in through the identity provider (an
// HttpOnly cookie the page never sees; its CSRF token, from /console/session, goes with every
// write). Every request goes to this page's origin.

const KEY = "wasmgate.key";

export class SignedOut extends Error {}

// The session from /console/session, once asked: null when there is none.
let session = null;
// Whether the gateway offers sign-in through an identity provider.
let oidc = false;

export function key() {
  return sessionStorage.getItem(KEY);
}

export function current() {
  return session;
}

export function oidcOn() {
  return oidc;
}

// Asks the gateway who this browser's session is (no key is needed for that).
export async function loadSession() {
  try {
    const response = await fetch("/console/session", { credentials: "same-origin", cache: "no-store" });
    const answer = await response.json();
    oidc = answer.oidc === true;
    session = answer.session ?? null;
  } catch {
    session = null;
  }
  return session;
}

export async function signOut() {
  sessionStorage.removeItem(KEY);
  if (session) {
    const csrf = session.csrf;
    session = null;
    try {
      await fetch("/console/logout", { method: "POST", credentials: "same-origin", headers: { "x-csrf-token": csrf } });
    } catch {
      // The cookie then lasts until it expires; nothing more the page can do.
    }
  }
}

// An admin key (`wasmgate admin-key create`) manages keys; it is not a project's key, so the
// usage APIs refuse it. A session with the admin role does everything.
export function isAdmin(candidate = key()) {
  if (typeof candidate === "string") return candidate.startsWith("wgadm_");
  return session?.roles?.admin === true;
}

// Whether a session manages some project's keys (an admin, or a project admin).
export function managesKeys() {
  if (key()) return isAdmin();
  return isAdmin() || Object.values(session?.roles?.projects ?? {}).includes("project_admin");
}

// The project a session's usage views show: the first it may read.
export function sessionProject() {
  return Object.keys(session?.roles?.projects ?? {})[0] ?? null;
}

// Checks `candidate` against the gateway (the API its kind may call) before keeping it;
// throws an Error whose message says why it was refused.
export async function signIn(candidate) {
  const answer = isAdmin(candidate)
    ? await call("GET", "/admin/keys", undefined, candidate)
    : await call("POST", "/usage/total", {}, candidate);
  sessionStorage.setItem(KEY, candidate);
  return answer;
}

export function patch(path, body) {
  return call("PATCH", path, body, key());
}

export function del(path) {
  return call("DELETE", path, undefined, key());
}

export function post(path, body) {
  return call("POST", path, body, key());
}

export function get(path) {
  return call("GET", path, undefined, key());
}

async function call(method, path, body, bearer) {
  let init;
  if (bearer) {
    init = { method, headers: { Authorization: `Bearer ${bearer}` }, credentials: "omit", cache: "no-store" };
  } else if (session) {
    init = { method, headers: {}, credentials: "same-origin", cache: "no-store" };
    if (method !== "GET") init.headers["x-csrf-token"] = session.csrf;
    const project = sessionProject();
    if (path.startsWith("/usage/") && project) init.headers["x-project-id"] = project;
  } else {
    throw new SignedOut("Sign in with a gateway key.");
  }
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new Error("The gateway cannot be reached.");
  }
  let answer = null;
  try {
    answer = await response.json();
  } catch {
    // Not JSON: the status says enough.
  }
  if (response.status === 401) {
    if (!bearer) session = null;
    throw new SignedOut(bearer
      ? "This key is not valid for this gateway (unknown or revoked)."
      : "The session has ended: sign in again.");
  }
  if (!response.ok) {
    const message = answer && answer.error && typeof answer.error.message === "string"
      ? answer.error.message
      : `The gateway answered ${response.status}.`;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return answer;
}
