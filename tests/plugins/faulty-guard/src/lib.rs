//! A guard that misbehaves on demand, so that the host's tests can check that a faulty guard
//! fails closed for its own request only. The last user message picks the fault on the
//! request; the answer's text does on the answer:
//!
//! | text contains | the guard |
//! |---|---|
//! | `guard-trap` | panics (a trap) |
//! | `guard-loop` | spins forever |
//! | `guard-hog` | allocates and touches memory without end |
//! | anything else | allows, and releases every event as it comes |

use core::hint::black_box;

use serde::Deserialize;
use wasmgate_plugin_sdk::{AnswerEvent, AnswerGuard, Guard, RequestVerdict, StreamVerdict};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {}

struct Faulty;

impl Guard for Faulty {
    type Options = Options;
    type Answer = Answer;

    fn check_request(_: &Options, request: &str) -> RequestVerdict {
        misbehave(request);
        RequestVerdict::Allow(Vec::new())
    }
}

/// The answer's text so far: a trigger split over deltas still triggers.
struct Answer(String);

impl AnswerGuard for Answer {
    type Options = Options;

    fn new(_: Options, _: &str) -> Self {
        Answer(String::new())
    }

    fn push(&mut self, events: Vec<AnswerEvent>) -> StreamVerdict {
        for event in &events {
            if let AnswerEvent::Text(t) = event {
                self.0.push_str(&t.text);
            }
        }
        misbehave(&self.0);
        StreamVerdict::release(events, 0, Vec::new())
    }

    fn finish(&mut self) -> StreamVerdict {
        StreamVerdict::release(Vec::new(), 0, Vec::new())
    }
}

fn misbehave(text: &str) {
    if text.contains("guard-trap") {
        panic!("faulty guard: trap requested");
    }
    if text.contains("guard-loop") {
        let mut n: u64 = 0;
        loop {
            n = black_box(n.wrapping_add(1));
        }
    }
    if text.contains("guard-hog") {
        let mut kept: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut block = vec![0u8; 1 << 20];
            for page in block.iter_mut().step_by(4096) {
                *page = 1;
            }
            kept.push(black_box(block));
        }
    }
}

wasmgate_plugin_sdk::export_guard!(Faulty);
