//! What the journal's appender and its reader share: where the journal is, its head, and its
//! counters. A leaf, so that the reader (`reader.rs`) need not import the journal that makes it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64};

/// Bytes read back from a segment at once, at most.
pub(super) const READ_MAX: usize = 4 << 20;

/// A place in the journal: a segment and a byte offset in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub segment: u64,
    pub offset: u64,
}

pub(super) struct Shared {
    pub(super) dir: PathBuf,
    pub(super) max_bytes: u64,
    /// Bytes of the segments on disk.
    pub(super) bytes: AtomicU64,
    /// The segment being appended to, and its bytes written whole (the reader stops there).
    pub(super) head: Mutex<Position>,
    pub(super) appended_records: AtomicU64,
    /// Appends (`write()` calls) that succeeded: records per append is how well groups form.
    pub(super) groups: AtomicU64,
    pub(super) confirmed_records: AtomicU64,
    /// Lines skipped: torn by a crash, or damaged.
    pub(super) torn: AtomicU64,
    /// Requests refused because the journal was full or could not be written.
    pub(super) refused: AtomicU64,
    /// Records handed to the writer and not yet taken.
    pub(super) handed: std::sync::atomic::AtomicUsize,
    /// A group without records (read the journal) is on its way to the writer: one is enough.
    pub(super) spill_sent: AtomicBool,
    /// The last append failed (a full disk): new requests are refused until one succeeds.
    pub(super) failing: AtomicBool,
    /// The journal was full at the last look, so that the change is logged once each way.
    pub(super) was_full: AtomicBool,
}

pub(super) fn segment_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("{index:016}.journal"))
}
