//! API errors: everything a client can be told went wrong ([`ApiError`], with its status and
//! detail), and the one place it becomes what the client reads, in its API ([`render`]). The
//! pipeline, the server's handlers and the batches all answer through it.

mod api_error;
mod render;

pub use api_error::{ApiError, BodyReadTimeout, Detail};
pub use render::{Dialect, ErrorNote};
