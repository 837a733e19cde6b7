//! The translating provider plugins (`anthropic`, `gemini`, `cohere`, `azure-openai`) through
//! the real gateway, driven by the async-openai client against mock upstreams that speak each
//! provider's native wire format (tests/common/mock_providers.rs).
//!
//! What every provider must do is one table: [`rows`] says, per provider, what its mock answers
//! and how its wire looks; [`behaviours`] holds one async function a behaviour (keys, usage,
//! streams, tool calls, errors); the `table!` below crosses them into one named test a cell
//! (`providers::gemini::upstream_429_is_a_rate_limit_error`), so a failure names both. A new
//! provider is a row and a line here, not a test file. What only one provider does (a
//! parameter only its API has, an option of its entry) is in [`native`].

mod behaviours;
mod client;
mod native;
mod rows;

/// Every behaviour for each `module: ROW`.
macro_rules! table {
    ($($provider:ident: $row:ident;)*) => {$(
        mod $provider {
            table!(@cells $row:
                chat_answers_the_text_and_usage,
                request_goes_to_the_native_path_with_the_key,
                stream_reassembles_the_text_and_reports_usage,
                stream_without_include_usage_ends_with_done_and_no_usage,
                stream_cut_short_by_the_upstream_is_not_passed_off_as_whole,
                tool_call_round_trips_in_the_providers_shape,
                streamed_tool_calls_arrive_as_indexed_deltas,
                upstream_429_is_a_rate_limit_error,
                upstream_500_is_a_bad_gateway,
                wrong_key_is_an_authentication_error,
                error_before_a_stream_is_json_not_a_stream,
            );
        }
    )*};
    (@cells $row:ident: $($behaviour:ident,)*) => {$(
        #[tokio::test]
        async fn $behaviour() {
            super::behaviours::$behaviour(&super::rows::$row).await;
        }
    )*};
}

table! {
    anthropic: ANTHROPIC;
    gemini: GEMINI;
    cohere: COHERE;
    azure_openai: AZURE;
}
