//! What the process keeps resident once it has started (issue 38: RSS under 32 MiB idle).
//!
//! Start-up runs code and reads data that serving never touches again: the command line and
//! config parsers, the ledger's migrations, plugin loading, the tokenizer's index build. The
//! kernel maps each page of the binary it faults in together with its cached neighbours
//! (fault-around, 64 KiB at a time, whatever `madvise` says), so an idle release gateway had
//! 19 MiB of its 36 MiB of code and 7 MiB of its read-only data mapped: three quarters of its
//! RSS, against 11 MiB of heap. [`release_start_up_pages`] unmaps the binary's clean pages once
//! start-up is done; they stay in the page cache, and what serving runs is faulted back in on
//! first use (about 10 MiB with the first requests: a minor fault per 64 KiB, once). Nothing new
//! can go wrong by it: these are clean file pages, which the kernel drops by itself whenever
//! memory runs short and reads back the same way.

use std::path::Path;

/// What was released: the resident KiB of the binary's clean mappings before, as `smaps` gave
/// them.
pub struct Released {
    pub kib: u64,
    pub mappings: usize,
}

/// Unmaps (`MADV_DONTNEED`) the pages of the binary's read-only and executable mappings that
/// hold no private copy. A mapping with anonymous pages (`.data.rel.ro`, written by the loader's
/// relocations before it became read-only) is left alone: dropping its pages would bring back
/// the file's unrelocated bytes. Linux only; elsewhere, and on any read error, nothing is done.
pub fn release_start_up_pages() -> Released {
    let mut released = Released {
        kib: 0,
        mappings: 0,
    };
    let (Ok(exe), Ok(smaps)) = (
        std::env::current_exe(),
        std::fs::read_to_string("/proc/self/smaps"),
    ) else {
        return released;
    };
    for mapping in clean_mappings(&smaps, &exe) {
        if advise_dont_need(mapping.start, mapping.end) {
            released.kib += mapping.rss_kib;
            released.mappings += 1;
        }
    }
    released
}

/// One read-only or executable mapping of the binary, as `smaps` gives it.
#[derive(Debug, PartialEq)]
pub struct Mapping {
    pub start: usize,
    pub end: usize,
    pub rss_kib: u64,
    /// Its copied-on-write pages, in KiB; `None` when `smaps` gave no count.
    pub anonymous_kib: Option<u64>,
}

/// The mappings of `exe` in `smaps` (a process's `/proc/<pid>/smaps`) that are read-only or
/// executable (never writable) and private: its code and read-only data.
pub fn binary_mappings(smaps: &str, exe: &Path) -> Vec<Mapping> {
    let mut found: Vec<Mapping> = Vec::new();
    // Whether the lines being read belong to the last mapping found.
    let mut in_last = false;
    for line in smaps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((start, end)) = first.split_once('-')
            && let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            )
        {
            let perms = fields.next().unwrap_or_default();
            // offset, device, inode, then the path (which may hold spaces).
            let path = fields.skip(3).collect::<Vec<_>>().join(" ");
            in_last = matches!(perms, "r--p" | "r-xp") && Path::new(&path) == exe;
            if in_last {
                found.push(Mapping {
                    start,
                    end,
                    rss_kib: 0,
                    anonymous_kib: None,
                });
            }
            continue;
        }
        let Some(mapping) = found.last_mut().filter(|_| in_last) else {
            continue;
        };
        let mut kib = || fields.next().and_then(|v| v.parse::<u64>().ok());
        match first {
            "Rss:" => mapping.rss_kib = kib().unwrap_or(0),
            "Anonymous:" => mapping.anonymous_kib = kib(),
            _ => {}
        }
    }
    found
}

/// The binary's mappings that may be released: those that hold no anonymous (copied-on-write)
/// page, by a count `smaps` gave.
fn clean_mappings(smaps: &str, exe: &Path) -> Vec<Mapping> {
    let mut mappings = binary_mappings(smaps, exe);
    mappings.retain(|m| m.anonymous_kib == Some(0));
    mappings
}

#[cfg(target_os = "linux")]
fn advise_dont_need(start: usize, end: usize) -> bool {
    #[expect(
        unsafe_code,
        reason = "MADV_DONTNEED on a clean private file mapping of the binary: its pages are read \
                  again from the file on the next access, the same bytes (no copy-on-write page \
                  is in the range: clean_mappings checked)"
    )]
    let result =
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED) };
    result == 0
}

#[cfg(not(target_os = "linux"))]
fn advise_dont_need(_start: usize, _end: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55609d427000-55609e567000 r--p 00000000 fe:00 8129433                    /opt/wasm gate/bin
Size:              17664 kB
Rss:                7252 kB
Anonymous:             0 kB
55609e567000-5560a0824000 r-xp 0113f000 fe:00 8129433                    /opt/wasm gate/bin
Size:              35572 kB
Rss:               19072 kB
Anonymous:             0 kB
5560a0824000-5560a0959000 r--p 033fb000 fe:00 8129433                    /opt/wasm gate/bin
Rss:                1236 kB
Anonymous:          1236 kB
5560a0959000-5560a0966000 rw-p 0352f000 fe:00 8129433                    /opt/wasm gate/bin
Rss:                  52 kB
Anonymous:            40 kB
7fa146c2f000-7fa146d85000 r-xp 00026000 fe:00 326279                     /usr/lib/libc.so.6
Rss:                1092 kB
Anonymous:             0 kB
44dac800000-44dec800000 rw-p 00000000 00:00 0
Rss:                9100 kB
Anonymous:          9100 kB
";

    #[test]
    fn only_the_binarys_clean_read_only_and_code_mappings_are_released() {
        let found = clean_mappings(SMAPS, Path::new("/opt/wasm gate/bin"));
        assert_eq!(
            found,
            [
                Mapping {
                    start: 0x5560_9d42_7000,
                    end: 0x5560_9e56_7000,
                    rss_kib: 7252,
                    anonymous_kib: Some(0),
                },
                Mapping {
                    start: 0x5560_9e56_7000,
                    end: 0x5560_a082_4000,
                    rss_kib: 19072,
                    anonymous_kib: Some(0),
                },
            ]
        );
    }

    #[test]
    fn a_mapping_whose_anonymous_count_is_missing_is_kept() {
        let smaps = "1000-2000 r-xp 00000000 fe:00 1 /bin/x\nRss: 4 kB\n";
        assert!(clean_mappings(smaps, Path::new("/bin/x")).is_empty());
    }

    #[test]
    fn released_pages_read_back_the_same_bytes() {
        // The test binary's own code and read-only data: released, then read again.
        let probe: &'static [u8] = b"a constant in the binary's read-only data";
        let before = probe.to_vec();
        let released = release_start_up_pages();
        assert!(
            cfg!(not(target_os = "linux")) || released.mappings > 0,
            "nothing released"
        );
        assert_eq!(probe, &before[..]);
        assert_eq!(std::hint::black_box(2 + 2), 4);
    }
}
