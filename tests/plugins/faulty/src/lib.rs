//! A provider that misbehaves on demand, so that the host's tests can check that a faulty plugin
//! costs one request and nothing more. The request's model picks the fault:
//!
//! | model | `prepare` |
//! |---|---|
//! | `trap` | panics (a trap, since plugins build with `panic = "abort"`) |
//! | `loop` | spins forever |
//! | `hog` | allocates and touches memory without end, past 1 GiB |
//! | `slow-ok` | spins for about 20 ms of CPU, then answers |
//! | `work` | does a fixed amount of work (about 3 ms of CPU here), then answers |
//! | `trap-stream`, streamed | goes upstream to `{base_url}/chat/completions`; the decoder panics |
//! | `snoop` | tries the environment, the filesystem and a socket, and answers with what it got |
//! | anything else | answers "ok" locally; with the option `join_model: true`, goes upstream to `{base_url}/models/{model}` |
//!
//! `validate` rejects the option `reject: true`. `join_model` joins the model name into the URL
//! unescaped, with the entry's key, as a careless third-party plugin would: the host's URL guard
//! is what keeps such a request under the entry's `base_url`.

use core::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmgate_plugin_sdk::http::join_url;
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, Entry, HttpRequest, HttpResponse, PluginError,
    Prepared, Provider, ProviderConfig, RequestInfo, StreamDecoder, StreamOutput, Usage,
    openai_error, openai_usage_in_body,
};

/// The entry's options, any keys: only `reject` and `join_model` mean something.
type Settings = serde_json::Map<String, Value>;

/// Whether the entry's boolean option `name` is `true`.
fn option(entry: &Entry<Settings>, name: &str) -> bool {
    entry.settings.get(name) == Some(&Value::Bool(true))
}

struct Faulty;

impl Provider for Faulty {
    type Settings = Settings;
    type Decoder = PanickingDecoder;
    const LOCAL: bool = true;

    fn validate(entry: &Entry<Settings>) -> Result<(), ConfigError> {
        if option(entry, "reject") {
            return Err(ConfigError::at("reject", "rejected on request"));
        }
        Ok(())
    }

    fn prepare(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        match request.model.as_str() {
            "trap" => panic!("faulty plugin: trap requested"),
            "loop" => spin_forever(),
            "hog" => hog_memory(),
            "work" => {
                fixed_work();
                Ok(ok_answer(&request))
            }
            "slow-ok" => {
                spin_for(Duration::from_millis(20));
                Ok(ok_answer(&request))
            }
            "trap-stream" if request.stream => {
                if entry.base_url.is_empty() {
                    return Err(PluginError::invalid_request(
                        "trap-stream needs the entry's base_url",
                    ));
                }
                let url = join_url(&entry.base_url, "chat/completions");
                let http = HttpRequest::post_json(url, request.body.into_bytes())
                    .header("accept", "text/event-stream");
                Ok(Prepared::Upstream(http))
            }
            "snoop" => Ok(snoop(&request)),
            // The SDK adds the key.
            _ if option(entry, "join_model") => {
                let base = entry.base_url.trim_end_matches('/');
                let url = format!("{base}/models/{}", request.model);
                let http = HttpRequest::post_json(url, request.body.into_bytes());
                Ok(Prepared::Upstream(http))
            }
            _ => Ok(ok_answer(&request)),
        }
    }

    fn parse_response(
        _: &Entry<Settings>,
        _request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        if !response.is_success() {
            return Err(openai_error(response.status, &response.body));
        }
        let usage = openai_usage_in_body(&response.body);
        let body = String::from_utf8(response.body)
            .map_err(|_| PluginError::upstream("upstream body is not UTF-8"))?;
        Ok(Completion { body, usage })
    }
}

wasmgate_plugin_sdk::export_provider!(Faulty);

/// Panics on the first bytes of a stream.
struct PanickingDecoder;

impl StreamDecoder for PanickingDecoder {
    fn new(_: ProviderConfig, _: RequestInfo, _: &[(String, String)]) -> Self {
        PanickingDecoder
    }

    fn push(&mut self, _: &[u8]) -> Result<StreamOutput, PluginError> {
        panic!("faulty plugin: trap in the stream decoder")
    }

    fn finish(&mut self) -> Result<StreamOutput, PluginError> {
        panic!("faulty plugin: trap at the end of the stream")
    }
}

/// Never returns; `black_box` keeps the optimiser from proving the loop useless.
fn spin_forever() -> ! {
    let mut n = 0u64;
    loop {
        n = black_box(n).wrapping_add(1);
    }
}

/// Grows linear memory 1 MiB at a time until the host's limit (or wasm32's 4 GiB) stops it.
/// Every 4 KiB page is written so the memory is really committed, and `black_box` keeps the
/// blocks alive in the optimiser's eyes.
fn hog_memory() -> ! {
    const BLOCK: usize = 1 << 20;
    const PAGE: usize = 4096;
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = vec![0u8; BLOCK];
        for i in (0..BLOCK).step_by(PAGE) {
            block[i] = black_box(1);
        }
        blocks.push(black_box(block));
        black_box(&blocks);
    }
}

/// Reports what the sandbox lets a plugin reach: it should be nothing.
fn snoop(request: &CanonicalRequest) -> Prepared {
    let env = std::env::vars_os().count();
    let args = std::env::args_os().count();
    let files = ["/", "/etc/passwd", "."]
        .iter()
        .filter(|path| std::fs::metadata(path).is_ok())
        .count();
    let socket = std::net::TcpStream::connect(("127.0.0.1", 80)).is_ok()
        || std::net::TcpListener::bind(("127.0.0.1", 0)).is_ok();
    let report = json!({"env": env, "args": args, "files": files, "socket": socket});
    let body = json!({"id": "chatcmpl-snoop", "object": "chat.completion", "created": 0,
        "model": request.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": report.to_string()},
            "finish_reason": "stop"}]});
    Prepared::Local(Completion {
        body: body.to_string(),
        usage: None,
    })
}

/// Burns real CPU (not sleeping) for `duration`.
fn spin_for(duration: Duration) {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < duration {
        for _ in 0..1_000 {
            x = black_box(x.wrapping_mul(31).wrapping_add(7));
        }
    }
}

/// A fixed amount of work, however long the host takes to give it the CPU: a valid call whose
/// CPU time is known while its wall-clock time depends on the host's load.
fn fixed_work() {
    let mut x = 0u64;
    for _ in 0..WORK_ROUNDS {
        x = black_box(x.wrapping_mul(31).wrapping_add(7));
    }
    black_box(x);
}

/// Rounds of `fixed_work`: about 3 ms of CPU on our 2-core machines.
const WORK_ROUNDS: u64 = 3_000_000;

/// A well-formed answer with the content "ok", whole or streamed as the request asked.
fn ok_answer(request: &CanonicalRequest) -> Prepared {
    let (id, created, model) = ("chatcmpl-faulty", 0, request.model.as_str());
    let usage = Usage::tokens(1, 1);
    if request.stream {
        let chunk = |delta: Value, finish: Option<&str>| {
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string()
        };
        let events = vec![
            chunk(json!({"role": "assistant", "content": "ok"}), None),
            chunk(json!({}), Some("stop")),
        ];
        return Prepared::LocalStream(StreamOutput {
            events,
            usage: Some(usage),
        });
    }
    let body = json!({"id": id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}});
    Prepared::Local(Completion {
        body: body.to_string(),
        usage: Some(usage),
    })
}
