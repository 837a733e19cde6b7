//! `/mcp`, the Streamable HTTP transport: `POST` takes one JSON-RPC message and answers it with
//! one JSON response (202 for a notification), or, for a `tools/call` asking for progress, with
//! an event stream of the server's progress and then the answer; `GET` opens the session's
//! stream of server notifications (list changes); `DELETE` is refused with 405 (a session id is
//! a signed token that lapses by itself, so there is nothing to end early, which the transport
//! allows). `notifications/cancelled` cancels the call it names (see [`crate::mcp::progress`]).
//! The older HTTP+SSE transport is in [`legacy`].
//!
//! Every request presents a gateway key (`Authorization: Bearer`); after `initialize` it also
//! presents the session id it was given, which must belong to the same key. An `Origin` header,
//! when sent, must name the host the request was sent to (the transport's guard against DNS
//! rebinding). Sessions are in [`crate::mcp::session`]; methods in [`crate::mcp::dispatch`].

mod entry;
mod handshake;
mod legacy;
mod message;
mod streamable;

pub use streamable::routes;
