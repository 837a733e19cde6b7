//! The usage journal: every record appended to a local file before its answer's last byte goes
//! out, so that a process killed at any moment loses no record its client saw answered.
//!
//! A record handed to the kernel by `write()` survives the process; only the machine's own crash
//! needs `fsync` (`ledger.journal.fsync`). Without `fsync` records are appended in groups on the
//! runtime: the first record of a group starts a task ([`Lead`]) that yields to the runtime once
//! and then writes every record that joined meanwhile with one `write()` to the page cache
//! (microseconds; no thread to wake) and wakes the requests that wait on them. Alone, a record
//! costs a task and a turn of the scheduler; under load the requests that end in the same turn
//! share one `write()` and one hand-over to the writer, where each cost a system call and a
//! wake-up of its own. With `fsync` (or when a write fails) the records go to the appender thread,
//! which takes every record queued while the last group was written and writes them with one
//! `write()` and one `fsync`, then wakes the requests that wait on them (an `fsync` would hold a
//! runtime thread for milliseconds; a failing disk is retried there with a backoff).
//!
//! The journal is also the ledger writer's queue. After each append the appender hands the
//! group's records to the writer in memory ([`Group`]), while the writer keeps up (a few batches'
//! worth at most); the writer writes them to the database and marks them confirmed (the
//! `confirmed` file). When it falls behind (the database is slow or down) groups are no longer
//! handed over, and the writer reads them back from disk ([`Reader`]) once it can go on: records
//! waiting for a database that is down sit on disk, not in memory. A process that starts reads
//! what its predecessor had not confirmed the same way. The
//! stores skip a record they already hold (the same request id and start time), so a record
//! written just before a crash, whose confirmation was lost, is not counted twice.
//!
//! The configured directory holds slots, `0/`, `1/`, ...: a process takes the first one no other
//! process holds (a lock file says so), so that replicas sharing a directory (two processes on
//! one SQLite file, say) each get their own, and one restarted takes the slot its predecessor
//! left with the records it left. Files, in a slot:
//! - `{index:016}.journal`: segments. A line is `{crc32 of the JSON, 8 hex digits} {JSON}\n`:
//!   a line torn by a crash (no terminator, or a checksum that does not match) is skipped and
//!   reported. Each process starts a segment of its own; a segment is closed at a size, and
//!   deleted once every record in it is confirmed.
//! - `confirmed`: the segment and offset up to which the database has every record.
//! - `lock`: held (an advisory lock) by the process that owns the directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use tokio::sync::oneshot;

use self::shared::{Shared, segment_path};
use super::record::UsageRecord;

mod reader;
mod shared;
pub use reader::Reader;
pub use shared::Position;

/// Records appended in one `write()` at most.
const GROUP_MAX: usize = 4_096;
/// A segment's size, at most: an eighth of the bound, between these two.
const SEGMENT_MIN: u64 = 64 << 10;
const SEGMENT_MAX: u64 = 64 << 20;
/// Slots of a journal directory: processes sharing it at once, at most.
const SLOTS: usize = 64;
/// Records handed to the writer in memory and not yet taken, at most; past them the writer
/// reads the journal instead.
const HANDED_MAX: usize = 8_000;

/// Where the journal lives and how hard it holds on (built from `ledger.journal`).
#[derive(Clone, Debug)]
pub struct JournalSettings {
    pub dir: PathBuf,
    /// `fsync` after each group: a machine's crash loses nothing either.
    pub fsync: bool,
    /// Bytes on disk at most; past them new requests are refused.
    pub max_bytes: u64,
}

/// Why the journal cannot open.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("ledger.journal.dir `{dir}`: {source}")]
    Io {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "ledger.journal.dir `{0}`: its {SLOTS} slots are all held by other processes; give \
         each replica a journal directory of its own"
    )]
    InUse(PathBuf),
}

/// What a request waits on before its last byte goes: its record's group is written.
#[must_use = "the answer's last byte must wait for its record (`.wait().await`)"]
pub struct Written(pub(super) Option<oneshot::Receiver<()>>);

impl Written {
    /// Nothing to wait for (the ledger keeps records in memory only).
    pub fn now() -> Self {
        Self(None)
    }

    /// Returns once the record is in the journal (at once without a journal). Should the
    /// appender be gone (the process is ending) it returns too: there is nothing left to wait on.
    pub async fn wait(self) {
        if let Some(written) = self.0 {
            let _ = written.await;
        }
    }
}

/// What writes an inline group: a task of its own, which yields once (so that the records of
/// requests ending in the same turn of the scheduler join) and writes. Not a request's task: a
/// request whose client stopped reading is not polled again until its socket drains, and the
/// other records of its group would wait on it. Dropped unwritten (the runtime shut down before
/// the task ran, or there was none), it writes the group at once.
struct Lead(Option<Arc<Journal>>);

impl Lead {
    fn write(&mut self) {
        if let Some(journal) = self.0.take() {
            journal.write_group();
        }
    }

    /// Writes the group from a task of its own, or at once outside a runtime.
    fn start(self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let mut lead = self;
                tokio::task::yield_now().await;
                lead.write();
            });
        }
        // Outside a runtime `self` is dropped here, and writes.
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        self.write();
    }
}

/// The records of one append, handed to the ledger writer so that it need not read them back.
pub struct Group {
    /// Where the append before this one ended: the writer takes this group only if it has
    /// everything up to there (else it reads the journal, which holds this group too).
    pub after: Position,
    /// Where this append ended.
    pub end: Position,
    /// `None` when the writer was too far behind to be handed more: it must read the journal.
    pub records: Option<Vec<UsageRecord>>,
}

/// The journal: the appender thread's queue, and what the appender and the reader share.
pub struct Journal {
    tx: Mutex<Option<mpsc::Sender<Entry>>>,
    /// The inline group being gathered: records appended since its task ([`Lead`]) started, not
    /// yet written.
    gathering: Mutex<Entry>,
    /// The groups the appender hands over, until the writer takes the receiver.
    groups: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Group>>>,
    shared: Arc<Shared>,
    /// The open segment, shared by the appender thread and requests appending at once.
    appender: Arc<Mutex<Appender>>,
    /// Without `fsync`, requests append themselves, in groups (with it, only the thread does:
    /// an `fsync` would hold a runtime thread for milliseconds).
    inline: bool,
    closed: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Held while the process runs: the directory's lock is released with it.
    _lock: File,
}

/// Records' lines and the records, and who waits for them to be written.
#[derive(Default)]
struct Entry {
    lines: Vec<u8>,
    records: Vec<UsageRecord>,
    waiting: Vec<oneshot::Sender<()>>,
}

impl Journal {
    /// Opens (creating it if need be) the journal directory, takes its lock, starts a segment of
    /// this process's own and the appender thread. What earlier processes left unconfirmed is
    /// read first by [`Journal::reader`].
    pub fn open(settings: &JournalSettings) -> Result<Arc<Self>, JournalError> {
        for slot in 0..SLOTS {
            match Self::open_slot(settings.dir.join(slot.to_string()), settings) {
                Err(JournalError::InUse(_)) => continue,
                opened => return opened,
            }
        }
        Err(JournalError::InUse(settings.dir.clone()))
    }

    fn open_slot(dir: PathBuf, settings: &JournalSettings) -> Result<Arc<Self>, JournalError> {
        let io = |source| JournalError::Io {
            dir: dir.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
            .map_err(io)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(JournalError::InUse(dir)),
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let confirmed = read_confirmed(&dir);
        let mut bytes = 0;
        let mut last = 0;
        for (index, path) in segments(&dir).map_err(io)? {
            if index < confirmed.segment {
                // Confirmed whole; its deletion was cut short.
                let _ = std::fs::remove_file(&path);
                continue;
            }
            bytes += std::fs::metadata(&path).map_err(io)?.len();
            last = index;
        }
        let index = last.max(confirmed.segment) + 1;
        let file = create_segment(&dir, index).map_err(io)?;
        let shared = Arc::new(Shared {
            dir: dir.clone(),
            max_bytes: settings.max_bytes,
            bytes: AtomicU64::new(bytes),
            head: Mutex::new(Position {
                segment: index,
                offset: 0,
            }),
            appended_records: AtomicU64::new(0),
            groups: AtomicU64::new(0),
            confirmed_records: AtomicU64::new(0),
            torn: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            handed: std::sync::atomic::AtomicUsize::new(0),
            spill_sent: AtomicBool::new(false),
            failing: AtomicBool::new(false),
            was_full: AtomicBool::new(false),
        });
        if bytes > 0 {
            tracing::info!(
                dir = %dir.display(),
                bytes,
                "the usage journal holds records of an earlier run: replaying them into the ledger"
            );
        }
        let (tx, rx) = mpsc::channel();
        // Unbounded as a channel, bounded by `HANDED_MAX` records: a group that would pass it
        // stays on disk only.
        let (groups_tx, groups) = tokio::sync::mpsc::unbounded_channel();
        let appender = Arc::new(Mutex::new(Appender {
            shared: Arc::clone(&shared),
            groups: Some(groups_tx),
            last_end: Position {
                segment: index,
                offset: 0,
            },
            file,
            segment: index,
            size: 0,
            fsync: settings.fsync,
            segment_bytes: (settings.max_bytes / 8).clamp(SEGMENT_MIN, SEGMENT_MAX),
        }));
        let thread = {
            let appender = Arc::clone(&appender);
            std::thread::Builder::new()
                .name("wasmgate-journal".to_owned())
                .spawn(move || run(&appender, &rx))
                .map_err(io)?
        };
        Ok(Arc::new(Self {
            tx: Mutex::new(Some(tx)),
            gathering: Mutex::new(Entry::default()),
            groups: Mutex::new(Some(groups)),
            shared,
            appender,
            inline: !settings.fsync,
            closed: AtomicBool::new(false),
            thread: Mutex::new(Some(thread)),
            _lock: lock,
        }))
    }

    /// Appends `record`: in the current inline group (without `fsync`), else through the
    /// thread's next group. What it returns says when the line is written; `None` once the
    /// journal is closed (or the record cannot be encoded).
    pub fn append(self: &Arc<Self>, record: UsageRecord) -> Option<Written> {
        if self.closed.load(Ordering::Relaxed) {
            return None;
        }
        if self.inline {
            let (done, written) = oneshot::channel();
            let mut gathering = crate::sync::lock(&self.gathering);
            let leads = gathering.records.is_empty();
            encode_into(&record, &mut gathering.lines).ok()?;
            gathering.records.push(record);
            gathering.waiting.push(done);
            drop(gathering);
            if leads {
                Lead(Some(Arc::clone(self))).start();
            }
            return Some(Written(Some(written)));
        }
        let mut lines = Vec::new();
        encode_into(&record, &mut lines).ok()?;
        let (done, written) = oneshot::channel();
        self.to_thread(Entry {
            lines,
            records: vec![record],
            waiting: vec![done],
        })?;
        Some(Written(Some(written)))
    }

    /// Writes the inline group gathered so far, and wakes who waits on it; when the write
    /// fails the thread takes the group (and retries).
    fn write_group(&self) {
        let mut group = std::mem::take(&mut *crate::sync::lock(&self.gathering));
        if group.records.is_empty() {
            return;
        }
        if lock(&self.appender)
            .append(&group.lines, &mut group.records)
            .is_ok()
        {
            for done in group.waiting {
                let _ = done.send(());
            }
            return;
        }
        // Gone (the journal closed): the waits end, as the thread's do when it ends.
        let _ = self.to_thread(group);
    }

    /// Hands `entry` to the appender thread; `None` once it is gone (the journal closed).
    fn to_thread(&self, entry: Entry) -> Option<()> {
        let tx = self.tx.lock().ok()?;
        tx.as_ref()?.send(entry).ok()
    }

    /// The groups the appender hands over (once: the ledger writer takes them). The channel
    /// closes when the journal does, after the last group.
    pub fn take_groups(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Group>> {
        self.groups.lock().ok()?.take()
    }

    /// The writer took `group` from the channel.
    pub fn taken(&self, group: &Group) {
        match &group.records {
            Some(records) => self
                .shared
                .handed
                .fetch_sub(records.len(), Ordering::Relaxed),
            None => usize::from(self.shared.spill_sent.swap(false, Ordering::Relaxed)),
        };
    }

    /// Whether new requests must be refused: the journal is at its bound (the database has been
    /// behind for long), or its disk refuses writes. The change is logged once each way.
    pub fn is_full(&self) -> bool {
        let bytes = self.bytes();
        let full = bytes >= self.shared.max_bytes || self.shared.failing.load(Ordering::Relaxed);
        // Read before written: every request looks, and a store to a shared line would cost.
        if self.shared.was_full.load(Ordering::Relaxed) != full
            && self.shared.was_full.swap(full, Ordering::Relaxed) != full
        {
            if full {
                tracing::error!(
                    bytes,
                    max_bytes = self.shared.max_bytes,
                    dir = %self.shared.dir.display(),
                    "the usage journal is full (or cannot be written): new requests are refused \
                     with 503 until the ledger database takes its records"
                );
            } else {
                tracing::info!(
                    bytes,
                    "the usage journal has room again: requests are served"
                );
            }
        }
        if full {
            self.shared.refused.fetch_add(1, Ordering::Relaxed);
        }
        full
    }

    /// The slot this process holds.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Bytes on disk.
    pub fn bytes(&self) -> u64 {
        self.shared.bytes.load(Ordering::Relaxed)
    }

    /// The bound of [`Self::bytes`], past which requests are refused.
    pub fn max_bytes(&self) -> u64 {
        self.shared.max_bytes
    }

    /// Requests refused because the journal was full.
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::Relaxed)
    }

    /// Lines skipped as torn or damaged.
    pub fn torn(&self) -> u64 {
        self.shared.torn.load(Ordering::Relaxed)
    }

    /// Records appended by this process and not yet confirmed.
    pub fn pending(&self) -> u64 {
        let appended = self.shared.appended_records.load(Ordering::Relaxed);
        appended.saturating_sub(self.shared.confirmed_records.load(Ordering::Relaxed))
    }

    /// Records appended by this process, and the `write()` calls that appended them.
    pub fn appends(&self) -> (u64, u64) {
        (
            self.shared.appended_records.load(Ordering::Relaxed),
            self.shared.groups.load(Ordering::Relaxed),
        )
    }

    /// Where the appender has written to.
    pub fn head(&self) -> Position {
        self.shared
            .head
            .lock()
            .map_or_else(|e| *e.into_inner(), |h| *h)
    }

    /// A reader from the last confirmed position: what earlier runs left, then this run's.
    pub fn reader(&self) -> Reader {
        self.reader_at(read_confirmed(&self.shared.dir))
    }

    /// A reader from `at`.
    pub fn reader_at(&self, at: Position) -> Reader {
        Reader {
            shared: Arc::clone(&self.shared),
            at,
            file: None,
        }
    }

    /// The database has every record before `at`: remembered, and segments wholly before it
    /// deleted. Records are counted as confirmed for [`Journal::pending`].
    pub fn confirm(&self, at: Position, records: usize) -> std::io::Result<()> {
        let dir = &self.shared.dir;
        let temp = dir.join("confirmed.new");
        std::fs::write(&temp, format!("{} {}\n", at.segment, at.offset))?;
        std::fs::rename(&temp, dir.join("confirmed"))?;
        self.shared
            .confirmed_records
            .fetch_add(records as u64, Ordering::Relaxed);
        for (index, path) in segments(dir)? {
            if index < at.segment {
                let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                std::fs::remove_file(&path)?;
                // Saturating: a failed append's torn bytes were never counted.
                let _ = self
                    .shared
                    .bytes
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                        Some(b.saturating_sub(size))
                    });
            }
        }
        Ok(())
    }

    /// Stops taking records and waits for the appender to write those it has.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            tracing::error!("the usage journal's appender panicked");
        }
        // The writer learns that nothing more comes.
        lock(&self.appender).groups = None;
    }
}

/// The appender's state, whatever a holder before panicked in the middle of (its worst is a
/// torn line, which the reader skips).
fn lock(appender: &Mutex<Appender>) -> std::sync::MutexGuard<'_, Appender> {
    crate::sync::lock(appender)
}

/// The appender thread: every record queued while the last group was written goes in the next.
fn run(appender: &Mutex<Appender>, rx: &mpsc::Receiver<Entry>) {
    while let Ok(mut group) = rx.recv() {
        while group.records.len() < GROUP_MAX {
            let Ok(next) = rx.try_recv() else { break };
            group.lines.extend_from_slice(&next.lines);
            group.records.extend(next.records);
            group.waiting.extend(next.waiting);
        }
        // Retried while the disk refuses (the requests behind it wait, and new ones are
        // refused meanwhile): a request is never answered without its record.
        let mut delay = std::time::Duration::from_millis(50);
        while lock(appender)
            .append(&group.lines, &mut group.records)
            .is_err()
        {
            std::thread::sleep(delay);
            delay = (delay * 2).min(std::time::Duration::from_secs(2));
        }
        for done in group.waiting {
            let _ = done.send(());
        }
    }
}

/// The open segment and its size, and where the groups go.
struct Appender {
    shared: Arc<Shared>,
    /// `None` once the journal is closed.
    groups: Option<tokio::sync::mpsc::UnboundedSender<Group>>,
    /// Where the last append ended.
    last_end: Position,
    file: File,
    segment: u64,
    size: u64,
    fsync: bool,
    segment_bytes: u64,
}

impl Appender {
    /// Appends `buf`, the lines of `records`, as one `write()`, and hands the records to the
    /// writer (taking them). On failure nothing is counted: the caller tries again later.
    fn append(&mut self, buf: &[u8], records: &mut Vec<UsageRecord>) -> std::io::Result<()> {
        if let Err(e) = self.try_write(buf) {
            if !self.shared.failing.swap(true, Ordering::Relaxed) {
                tracing::error!(
                    dir = %self.shared.dir.display(),
                    "cannot append to the usage journal, retrying: {e}"
                );
            }
            // What the failed write left in this segment stays there: a later segment takes
            // the whole group again, and the reader skips the torn part.
            self.size = u64::MAX;
            return Err(e);
        }
        if self.shared.failing.load(Ordering::Relaxed)
            && self.shared.failing.swap(false, Ordering::Relaxed)
        {
            tracing::info!("the usage journal is written again");
        }
        let end = Position {
            segment: self.segment,
            offset: self.size,
        };
        let after = std::mem::replace(&mut self.last_end, end);
        let n = records.len();
        self.shared.groups.fetch_add(1, Ordering::Relaxed);
        self.shared
            .appended_records
            .fetch_add(n as u64, Ordering::Relaxed);
        // Handed over only while the writer keeps up; else it is told once to read them from
        // disk (so that an outage grows no queue in memory).
        let records = std::mem::take(records);
        let handed = if self.shared.handed.load(Ordering::Relaxed) + n <= HANDED_MAX {
            self.shared.handed.fetch_add(n, Ordering::Relaxed);
            Some(Some(records))
        } else if !self.shared.spill_sent.swap(true, Ordering::Relaxed) {
            Some(None)
        } else {
            None
        };
        if let (Some(records), Some(groups)) = (handed, &self.groups) {
            // The writer gone (the ledger shut down) takes nothing more: nothing to do.
            let _ = groups.send(Group {
                after,
                end,
                records,
            });
        }
        Ok(())
    }

    fn try_write(&mut self, group: &[u8]) -> std::io::Result<()> {
        let len = group.len() as u64;
        if self.size > 0 && self.size.saturating_add(len) > self.segment_bytes {
            let next = self.segment + 1;
            let file = create_segment(&self.shared.dir, next)?;
            (self.file, self.segment, self.size) = (file, next, 0);
            self.set_head();
        }
        self.file.write_all(group)?;
        if self.fsync {
            self.file.sync_data()?;
        }
        self.size += len;
        self.shared.bytes.fetch_add(len, Ordering::Relaxed);
        self.set_head();
        Ok(())
    }

    fn set_head(&self) {
        if let Ok(mut head) = self.shared.head.lock() {
            *head = Position {
                segment: self.segment,
                offset: self.size,
            };
        }
    }
}

/// `record` as one journal line, `{crc32:08x} {json}\n`, appended to `lines` (left as it was
/// on failure). JSON escapes newlines, so the terminator is the line's only one.
fn encode_into(record: &UsageRecord, lines: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let start = lines.len();
    lines.extend_from_slice(b"00000000 ");
    if let Err(e) = serde_json::to_writer(&mut *lines, record) {
        lines.truncate(start);
        return Err(e);
    }
    let crc = crc32fast::hash(&lines[start + 9..]);
    for (i, digit) in lines[start..start + 8].iter_mut().enumerate() {
        *digit = HEX[((crc >> (28 - 4 * i)) & 0xf) as usize];
    }
    lines.push(b'\n');
    Ok(())
}

fn create_segment(dir: &Path, index: u64) -> std::io::Result<File> {
    OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(segment_path(dir, index))
}

/// The segments in the directory, by index.
fn segments(dir: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let index = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".journal"))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(index) = index {
            found.push((index, path));
        }
    }
    found.sort();
    Ok(found)
}

/// The confirmed position; the start when there is none yet (or it does not parse: then every
/// segment is read again, and the stores skip what they have).
fn read_confirmed(dir: &Path) -> Position {
    let text = std::fs::read_to_string(dir.join("confirmed")).unwrap_or_default();
    let mut parts = text.split_whitespace().map(str::parse::<u64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(segment)), Some(Ok(offset))) => Position { segment, offset },
        _ => Position::default(),
    }
}

#[cfg(test)]
mod tests;
