//! A PostgreSQL client error as text with its causes, for the connections and the migrations
//! alike (a leaf, so that neither imports the other for it).

/// The message of a client error with its causes (its `Display` alone says only "db error").
pub fn chain(error: &postgres::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
