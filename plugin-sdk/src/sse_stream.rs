//! A [`StreamDecoder`] for SSE upstreams, built from a per-event translator.
//!
//! Every SSE-speaking upstream needs the same plumbing around its own event mapping: parse the
//! bytes with [`SseParser`], translate each event, flush the last event at the end of the body,
//! and, when an event turns out to be an error, still hand over the events that came before it
//! (the host stops asking once a call fails). [`SseStream`] is that plumbing; a plugin writes an
//! [`EventTranslator`] and names `SseStream<MyTranslator>` as its `Provider::Decoder`.

use crate::sse::{SseEvent, SseParser};
use crate::{PluginError, ProviderConfig, RequestInfo, StreamDecoder, StreamOutput, Usage};

/// Turns one upstream's SSE events into OpenAI chunk events.
pub trait EventTranslator: Sized + 'static {
    /// Starts translating the stream that answers `request`.
    fn new(config: ProviderConfig, request: RequestInfo, headers: &[(String, String)]) -> Self;

    /// Translates one event, appending the chunks it completes to `out`. An `Err` ends the
    /// stream; chunks appended before it are still delivered.
    fn event(&mut self, event: SseEvent, out: &mut Vec<String>) -> Result<(), PluginError>;

    /// The body ended: appends any last chunks, or fails if the stream was cut short.
    fn end(&mut self, out: &mut Vec<String>) -> Result<(), PluginError>;

    /// The usage reported so far, if any.
    fn usage(&self) -> Option<Usage>;
}

/// The [`StreamDecoder`] of an [`EventTranslator`]. See the [module docs](self).
#[derive(Debug)]
pub struct SseStream<T> {
    sse: SseParser,
    translator: T,
    /// An error met after some chunks of the same call: those went out first.
    pending_error: Option<PluginError>,
}

impl<T: EventTranslator> SseStream<T> {
    /// The translator, e.g. to inspect its state in tests.
    pub fn translator(&self) -> &T {
        &self.translator
    }

    fn translate(
        &mut self,
        events: impl IntoIterator<Item = SseEvent>,
        end: bool,
    ) -> Result<StreamOutput, PluginError> {
        let mut out = Vec::new();
        let mut result = Ok(());
        for event in events {
            result = self.translator.event(event, &mut out);
            if result.is_err() {
                break;
            }
        }
        if end && result.is_ok() {
            result = self.translator.end(&mut out);
        }
        match result {
            Ok(()) => {}
            // No later call will come to report it after `finish`: the error wins there.
            Err(err) if out.is_empty() || end => return Err(err),
            Err(err) => self.pending_error = Some(err),
        }
        Ok(StreamOutput {
            events: out,
            usage: self.translator.usage(),
        })
    }
}

impl<T: EventTranslator> StreamDecoder for SseStream<T> {
    fn new(config: ProviderConfig, request: RequestInfo, headers: &[(String, String)]) -> Self {
        SseStream {
            sse: SseParser::new(),
            translator: T::new(config, request, headers),
            pending_error: None,
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Result<StreamOutput, PluginError> {
        if let Some(err) = self.pending_error.clone() {
            return Err(err);
        }
        let events = self.sse.push(bytes);
        self.translate(events, false)
    }

    fn finish(&mut self) -> Result<StreamOutput, PluginError> {
        if let Some(err) = self.pending_error.clone() {
            return Err(err);
        }
        let last = self.sse.finish();
        self.translate(last, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Operation;

    /// Passes `data` through; `fail` fails; the body must end after `end`.
    struct Echo {
        ended: bool,
    }

    impl EventTranslator for Echo {
        fn new(_: ProviderConfig, _: RequestInfo, _: &[(String, String)]) -> Self {
            Echo { ended: false }
        }
        fn event(&mut self, event: SseEvent, out: &mut Vec<String>) -> Result<(), PluginError> {
            match event.data.as_str() {
                "fail" => Err(PluginError::upstream("boom")),
                "end" => {
                    self.ended = true;
                    Ok(())
                }
                data => {
                    out.push(data.to_owned());
                    Ok(())
                }
            }
        }
        fn end(&mut self, _: &mut Vec<String>) -> Result<(), PluginError> {
            if self.ended {
                Ok(())
            } else {
                Err(PluginError::upstream("cut short"))
            }
        }
        fn usage(&self) -> Option<Usage> {
            None
        }
    }

    fn decoder() -> SseStream<Echo> {
        let config = ProviderConfig {
            name: "p".into(),
            base_url: None,
            api_key: None,
            models: vec![],
            options: String::new(),
        };
        let request = RequestInfo {
            native: None,
            operation: Operation::ChatCompletions,
            model: "m".into(),
            stream: true,
        };
        SseStream::new(config, request, &[])
    }

    #[test]
    fn events_before_an_error_go_out_first() {
        let mut d = decoder();
        let out = d.push(b"data: a\n\ndata: fail\n\ndata: b\n\n").unwrap();
        assert_eq!(out.events, ["a"]);
        assert_eq!(d.push(b"").unwrap_err().message, "boom");
        assert_eq!(d.finish().unwrap_err().message, "boom");
    }

    #[test]
    fn end_flushes_the_last_event_and_checks_completion() {
        let mut d = decoder();
        assert!(d.push(b"data: a\n\ndata: end").unwrap().events == ["a"]);
        assert!(d.finish().unwrap().events.is_empty());

        let mut d = decoder();
        d.push(b"data: a\n\n").unwrap();
        assert_eq!(d.finish().unwrap_err().message, "cut short");
    }
}
