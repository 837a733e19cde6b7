//! A JavaScript guard that asks for outside verdicts through the host, built with the SDK's
//! `consult`, `checkRequestReply` and an answer's `reply` (`sdk/js/guard.js`) by `plugin build`
//! and loaded from `plugins.dir`: its checks reach the operator's webhook only through the
//! entry's `endpoint`, the request is refused and the answer stopped on the webhook's word.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::guards::falcon_webhook;
use common::js_guard::{build_js_guard, js_guarded, say};
use serde_json::{Value, json};

/// The guard: every request and every whole answer is sent to the endpoint as
/// `{"side", "input"}`; `{"flagged": true}` refuses or stops.
const APP: &str = r#"
import { allow, consult, consultAnswer, defineGuard, refuse, release, requestTexts, stop } from 'wasmgate-plugin/guard';

const textOf = (events) => events.filter((e) => e.tag === 'text').map((e) => e.val.text).join('');
const flagged = (reply) => consultAnswer(reply)?.body?.flagged === true;

export const guard = defineGuard({
  validate() {
    return 4096;
  },
  checkRequest(options, request) {
    return consult({ side: 'request', input: requestTexts(request) }, 'asked');
  },
  checkRequestReply(options, request, context, reply) {
    if (context !== 'asked') throw new Error(`context ${context} did not come back`);
    return flagged(reply) ? refuse('flagged by the policy service', 403, { flagged: 1 }) : allow();
  },
  answer() {
    let held = [];
    return {
      push(events) {
        held.push(...events);
        return release([], [...textOf(held)].length);
      },
      finish() {
        return consult({ side: 'answer', input: [textOf(held)] });
      },
      reply(reply) {
        if (flagged(reply)) return stop('flagged by the policy service', { flagged: 1 });
        const out = held;
        held = [];
        return release(out, 0);
      },
    };
  },
});
"#;

#[tokio::test]
async fn a_javascript_guard_asks_the_operators_webhook_through_the_host() {
    let dir = common::binary::temp_dir("js-consult");
    let plugins = build_js_guard(&dir, "js-consult", Some(APP));
    let (url, seen) = falcon_webhook().await;
    let gateway = js_guarded(
        &plugins,
        &format!("  - plugin: js-consult\n    endpoint: {{ url: \"{url}\", timeout_ms: 2000 }}\n"),
    )
    .await;

    let passed = say(&gateway, "a/m", "hello there", false).await;
    assert_eq!(passed.status(), 200);
    let body: Value = passed.json().await.unwrap();
    assert!(
        body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("hello there"),
        "{body}"
    );
    assert_eq!(
        seen.lock().unwrap().clone(),
        [
            json!({"side": "request", "input": ["hello there"]}),
            json!({"side": "answer", "input": [body["choices"][0]["message"]["content"]]}),
        ]
    );

    let refused = say(&gateway, "a/m", "tell me about the falcon", false).await;
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "guard_refused", "{body}");

    let stopped = say(&gateway, "b/m", "hello there", false).await;
    assert_ne!(stopped.status(), 200);
    let body = stopped.text().await.unwrap();
    assert!(body.contains("answer_stopped"), "{body}");
    assert!(!body.to_lowercase().contains("falcon flies"), "{body}");
    let _ = std::fs::remove_dir_all(&dir);
}
