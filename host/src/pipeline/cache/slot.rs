//! What the cache did for one request, carried on its context: what its answer's
//! `x-wasmgate-cache` header says, and the key, TTL and (for a stream) the answer being
//! assembled that a miss keeps once it is whole. `lookup.rs` fills it in; the way out and the
//! relay keep the answer through it.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};

use crate::cache::answer::{self, Assembler, Entry, Form, StoredUsage};
use crate::cache::key::Key;
use crate::cache::vectors::Item;
use crate::cache::{Cache, now_ms};
use crate::plugins::Usage;

/// A semantic hit's header: the cosine similarity of the request's last user turn to the one
/// the answer was kept for (an exact hit has none).
const SIMILARITY_HEADER: &str = "x-wasmgate-cache-similarity";

/// What the cache did for a request: what its answer's `x-wasmgate-cache` says, and the key its
/// answer is to be kept under.
#[derive(Default)]
pub struct Slot {
    /// `None` while the cache is off altogether (no header then).
    pub(super) outcome: Option<Outcome>,
    /// A semantic hit's similarity to the turn it was kept for.
    pub(super) similarity: Option<f32>,
    pub(super) fill: Option<Fill>,
}

/// What `x-wasmgate-cache` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Answered from the cache.
    Hit,
    /// Looked up, not found (or not in the form asked for).
    Miss,
    /// Not looked up: the cache is off for the request, or the client said `no-cache`.
    Bypass,
}

impl Outcome {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Outcome::Hit => "hit",
            Outcome::Miss => "miss",
            Outcome::Bypass => "bypass",
        }
    }
}

/// An answer to be kept: its key, its TTL, and (for a stream) the completion being assembled.
pub struct Fill {
    pub(super) cache: Arc<Cache>,
    pub(super) key: Key,
    pub(super) ttl: Duration,
    pub(super) background: tokio_util::task::TaskTracker,
    pub(super) assembler: Option<Assembler>,
    /// A native stream's events and their bytes so far (`None` when it outgrew the limit).
    pub(super) native: Option<(Vec<String>, usize)>,
    /// The semantic mode's vector to keep beside the answer.
    pub(super) indexed: Option<Indexed>,
}

/// A kept answer found for the request.
pub struct Hit {
    pub(in crate::pipeline) entry: Entry,
}

impl Slot {
    /// The `x-wasmgate-cache` header of the answer (none when the cache is off altogether),
    /// and a semantic hit's similarity.
    pub fn headers(&self) -> impl Iterator<Item = (HeaderName, HeaderValue)> {
        let outcome = self.outcome.map(|outcome| {
            (
                HeaderName::from_static("x-wasmgate-cache"),
                HeaderValue::from_static(outcome.as_str()),
            )
        });
        let similarity = self.similarity.and_then(|similarity| {
            let value = HeaderValue::from_str(&format!("{similarity:.4}")).ok()?;
            Some((HeaderName::from_static(SIMILARITY_HEADER), value))
        });
        outcome.into_iter().chain(similarity)
    }

    /// Keeps a whole answer that finished: canonical, or (`native`) in the client's dialect.
    pub fn keep_whole(
        &mut self,
        provider: &str,
        model: &str,
        body: &str,
        usage: Option<Usage>,
        native: bool,
    ) {
        let Some(fill) = self.fill.take() else { return };
        let (form, finished) = match native {
            false => (Form::Canonical, answer::cacheable(body)),
            true => (Form::NativeWhole, answer::native_cacheable(body)),
        };
        if fill.assembler.is_some() || !finished {
            return;
        }
        let answer_id = native.then(|| answer::native_id(Some(body), &[])).flatten();
        let kept = Kept {
            form,
            completion: body.to_owned(),
            events: Vec::new(),
            answer_id,
        };
        fill.keep(provider, model, kept, usage);
    }

    /// A stream's events as they pass: canonical chunks, or a native stream's own events.
    pub fn push(&mut self, events: &[String]) {
        let Some(fill) = &mut self.fill else { return };
        if let Some(assembler) = &mut fill.assembler
            && !assembler.given_up()
        {
            assembler.push(events);
        }
        let limit = fill.cache.max_entry_bytes();
        if let Some((kept, bytes)) = &mut fill.native {
            *bytes += events.iter().map(String::len).sum::<usize>();
            if *bytes > limit {
                fill.native = None;
            } else {
                kept.extend(events.iter().cloned());
            }
        }
    }

    /// The stream passes in the client's dialect untouched: its events are kept as they are.
    pub fn native_stream(&mut self) {
        if let Some(fill) = &mut self.fill {
            fill.assembler = None;
            fill.native = Some((Vec::new(), 0));
        }
    }

    /// The stream ended normally: what it made is kept.
    pub fn streamed(&mut self, provider: &str, model: &str, usage: Option<Usage>) {
        let Some(mut fill) = self.fill.take() else {
            return;
        };
        if let Some((events, _)) = fill.native.take() {
            if !answer::native_stream_finished(&events) {
                return;
            }
            let kept = Kept {
                form: Form::NativeStream,
                completion: String::new(),
                answer_id: answer::native_id(None, &events),
                events,
            };
            fill.keep(provider, model, kept, usage);
            return;
        }
        let Some(completion) = fill.assembler.take().and_then(Assembler::finish) else {
            return;
        };
        let kept = Kept {
            form: Form::Canonical,
            completion,
            events: Vec::new(),
            answer_id: None,
        };
        fill.keep(provider, model, kept, usage);
    }
}

/// The answer's part of an entry.
struct Kept {
    form: Form,
    completion: String,
    events: Vec<String>,
    answer_id: Option<String>,
}

impl Fill {
    /// Writes the entry off the answer's path (a Redis write must not delay the last byte); the
    /// shutdown waits for it with the other background work.
    fn keep(self, provider: &str, model: &str, kept: Kept, usage: Option<Usage>) {
        let stored_ms = now_ms();
        let entry = Entry {
            form: kept.form,
            completion: kept.completion,
            events: kept.events,
            answer_id: kept.answer_id,
            usage: usage.map(StoredUsage::from),
            provider: provider.to_owned(),
            model: model.to_owned(),
            stored_ms,
            expires_ms: stored_ms
                .saturating_add(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)),
        };
        let Self {
            cache,
            key,
            background,
            indexed,
            ..
        } = self;
        background.spawn(async move {
            let expires_ms = entry.expires_ms;
            if cache.put(&key, &entry).await
                && let Some(indexed) = indexed
            {
                indexed.add(&cache, key, expires_ms).await;
            }
        });
    }
}

/// What a miss keeps beside its answer: the scope and vector to find it by.
pub struct Indexed {
    pub scope: String,
    pub vector: Vec<f32>,
}

impl Indexed {
    /// Adds the vector of an answer kept under `key` until `expires_ms`.
    pub async fn add(self, cache: &crate::cache::Cache, key: Key, expires_ms: u64) {
        let Some(vectors) = &cache.vectors else {
            return;
        };
        let item = Item {
            key,
            expires_ms,
            vector: self.vector,
        };
        if let Err(e) = vectors.add(&self.scope, item).await {
            tracing::warn!("the semantic cache could not keep a vector: {e}");
        }
    }
}
