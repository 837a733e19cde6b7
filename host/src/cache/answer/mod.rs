//! A cached answer: one canonical chat completion, whether it came whole or as a stream. A
//! stream's chunks are assembled into it as they pass; a streamed request served from the cache
//! gets it back as chunks in the order Chat Completions defines (the role, the text, the tool
//! calls, the finish reason, the usage), which the client's dialect then encodes like a live
//! stream's.
//!
//! Its parts: what the store keeps (here); assembling a stream into a completion (`assemble`);
//! a completion replayed as a stream's chunks (`replay`); and what is read of a native answer,
//! kept as the target gave it (`native`).

mod assemble;
mod entry;
mod head;
mod native;
mod replay;

pub use assemble::Assembler;
pub use entry::{Entry, Form, StoredUsage, cacheable};
pub use native::{native_cacheable, native_id, native_stream_finished};
pub use replay::chunks;
