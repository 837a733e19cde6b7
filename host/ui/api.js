// The gateway's own APIs, with the key the user signed in with (kept in this tab's
// sessionStorage). Every request goes to this page's origin.

const KEY = "wasmgate.key";

export class SignedOut extends Error {}

export function key() {
  return sessionStorage.getItem(KEY);
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}

// An admin key (`wasmgate admin-key create`) manages keys; it is not a project's key, so the
// usage APIs refuse it.
export function isAdmin(candidate = key()) {
  return typeof candidate === "string" && candidate.startsWith("wgadm_");
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
  if (!bearer) throw new SignedOut("Sign in with a gateway key.");
  const init = {
    method,
    headers: { Authorization: `Bearer ${bearer}` },
    credentials: "omit",
    cache: "no-store",
  };
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
    throw new SignedOut("This key is not valid for this gateway (unknown or revoked).");
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
