//! Reading the journal back, in order, for the ledger writer: after a crash, and when the
//! writer has fallen behind what it was handed in memory. A torn or damaged line is skipped,
//! logged and counted.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::shared::{Position, READ_MAX, Shared, segment_path};
use crate::ledger::record::UsageRecord;

/// Reads records back from the journal, in order, for the ledger writer.
pub struct Reader {
    pub(super) shared: Arc<Shared>,
    pub(super) at: Position,
    pub(super) file: Option<(u64, File)>,
}

impl Reader {
    /// Where the reader is.
    pub fn at(&self) -> Position {
        self.at
    }

    /// Up to `max` records after the reader's position, and the position after them (to confirm
    /// once they are written). Empty when the reader has caught up with the appender.
    pub fn next_batch(&mut self, max: usize) -> std::io::Result<(Vec<UsageRecord>, Position)> {
        let mut records = Vec::new();
        let mut buf = Vec::new();
        while records.len() < max {
            let head = *self
                .shared
                .head
                .lock()
                .map_err(|_| std::io::Error::other("the journal's head lock is poisoned"))?;
            if self.at.segment > head.segment {
                break;
            }
            let live = self.at.segment == head.segment;
            let file = match &self.file {
                Some((segment, file)) if *segment == self.at.segment => file,
                _ => match File::open(segment_path(&self.shared.dir, self.at.segment)) {
                    Ok(file) => &self.file.insert((self.at.segment, file)).1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && !live => {
                        self.at = Position {
                            segment: self.at.segment + 1,
                            offset: 0,
                        };
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            // In the live segment the reader stops at what the appender wrote whole; an older
            // one is read to its end, torn tail and all.
            let end = if live {
                head.offset
            } else {
                file.metadata()?.len()
            };
            if self.at.offset >= end {
                if live {
                    break;
                }
                self.at = Position {
                    segment: self.at.segment + 1,
                    offset: 0,
                };
                continue;
            }
            let want = usize::try_from(end - self.at.offset).unwrap_or(READ_MAX);
            buf.resize(want.min(READ_MAX), 0);
            let read = file.read_at(&mut buf, self.at.offset)?;
            let chunk = &buf[..read];
            let mut used = 0;
            for line in chunk.split_inclusive(|&b| b == b'\n') {
                if records.len() == max {
                    break;
                }
                let Some(body) = line.strip_suffix(b"\n") else {
                    // No terminator: torn, unless the rest of the line is beyond this read.
                    if !live && self.at.offset + (used + line.len()) as u64 >= end {
                        self.skip(self.at.segment, self.at.offset + used as u64, "torn");
                        used += line.len();
                    } else if used == 0 && read == READ_MAX {
                        self.skip(self.at.segment, self.at.offset, "overlong");
                        used = read;
                    }
                    break;
                };
                used += line.len();
                match decode(body) {
                    Some(record) => records.push(record),
                    None => self.skip(self.at.segment, self.at.offset + used as u64, "damaged"),
                }
            }
            if used == 0 && read == 0 {
                break;
            }
            self.at.offset += used as u64;
        }
        Ok((records, self.at))
    }

    fn skip(&self, segment: u64, offset: u64, how: &str) {
        self.shared.torn.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            segment = %segment_path(&self.shared.dir, segment).display(),
            offset,
            "skipped a {how} line of the usage journal (a crash cut it short): its request \
             never got its answer's last byte"
        );
    }
}

/// A line without its terminator back into a record; `None` when its checksum does not match.
fn decode(line: &[u8]) -> Option<UsageRecord> {
    let (crc, json) = (line.get(..8)?, line.get(9..)?);
    let crc = u32::from_str_radix(std::str::from_utf8(crc).ok()?, 16).ok()?;
    if line.get(8) != Some(&b' ') || crc32fast::hash(json) != crc {
        return None;
    }
    serde_json::from_slice(json).ok()
}
