//! The journal alone: lines back as they went in, torn and damaged lines skipped and counted,
//! what an earlier run left read first, segments trimmed once confirmed, the bound, the lock.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;

use super::*;

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmgate-journal-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn settings(dir: &Path, max_bytes: u64) -> JournalSettings {
    JournalSettings {
        dir: dir.to_owned(),
        fsync: false,
        max_bytes,
    }
}

fn record(i: u64) -> UsageRecord {
    UsageRecord {
        request_id: format!("req-{i}"),
        time_us: 1_700_000_000_000_000 + i as i64,
        project: "p".to_owned(),
        user_tags: vec!["a\nb".to_owned()],
        input_tokens: i,
        status: 200,
        ..UsageRecord::default()
    }
}

async fn append(journal: &Arc<Journal>, from: u64, to: u64) {
    for i in from..to {
        journal.append(record(i)).expect("open").wait().await;
    }
}

/// `record`'s journal line alone.
fn encode(record: &UsageRecord) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = Vec::new();
    encode_into(record, &mut line)?;
    Ok(line)
}

fn read_all(reader: &mut Reader) -> (Vec<u64>, Position) {
    let mut all = Vec::new();
    loop {
        let (batch, at) = reader.next_batch(7).unwrap();
        if batch.is_empty() {
            return (all, at);
        }
        all.extend(batch.iter().map(|r| r.input_tokens));
    }
}

#[tokio::test]
async fn records_come_back_in_order_and_a_confirmed_one_is_not_read_again() {
    let dir = dir("order");
    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    append(&journal, 0, 20).await;
    let mut reader = journal.reader();
    let (read, at) = read_all(&mut reader);
    assert_eq!(read, (0..20).collect::<Vec<_>>());
    let (batch, _) = reader.next_batch(10).unwrap();
    assert_eq!(batch[..0], [], "caught up");
    assert_eq!(journal.pending(), 20);
    journal.confirm(at, 20).unwrap();
    assert_eq!(journal.pending(), 0);
    append(&journal, 20, 25).await;
    journal.close();
    drop(journal);

    // The next run reads only what was not confirmed.
    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    let (read, _) = read_all(&mut journal.reader());
    assert_eq!(read, (20..25).collect::<Vec<_>>());
    assert_eq!(journal.torn(), 0);
}

#[tokio::test]
async fn a_torn_last_line_is_skipped_and_reported() {
    let dir = dir("torn");
    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    append(&journal, 0, 3).await;
    let segment = journal.head().segment;
    let slot = journal.dir().to_owned();
    journal.close();
    drop(journal);
    // A crash cut the last append short: half a line, no terminator.
    let line = encode(&record(3)).unwrap();
    let mut file = OpenOptions::new()
        .append(true)
        .open(segment_path(&slot, segment))
        .unwrap();
    file.write_all(&line[..line.len() / 2]).unwrap();
    drop(file);

    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    append(&journal, 4, 6).await;
    let (read, _) = read_all(&mut journal.reader());
    assert_eq!(
        read,
        vec![0, 1, 2, 4, 5],
        "the torn line is left out, nothing else"
    );
    assert_eq!(journal.torn(), 1, "and counted");
}

#[tokio::test]
async fn a_line_whose_checksum_fails_is_skipped_and_reported() {
    let dir = dir("damaged");
    std::fs::create_dir_all(dir.join("0")).unwrap();
    let mut bytes = encode(&record(0)).unwrap();
    let mut damaged = encode(&record(1)).unwrap();
    // One digit of the token count changed: still JSON, no longer the checksummed line.
    let at = damaged.len() - 20;
    damaged[at] = if damaged[at] == b'7' { b'8' } else { b'7' };
    bytes.extend(damaged);
    bytes.extend(encode(&record(2)).unwrap());
    bytes.extend(b"not a journal line\n");
    std::fs::write(segment_path(&dir.join("0"), 1), bytes).unwrap();

    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    let (read, _) = read_all(&mut journal.reader());
    assert_eq!(read, vec![0, 2]);
    assert_eq!(journal.torn(), 2);
}

#[tokio::test]
async fn confirmed_segments_are_deleted_and_the_bound_refuses_until_then() {
    let dir = dir("bound");
    // 1 MiB bound: segments of 128 KiB.
    let journal = Journal::open(&settings(&dir, 1 << 20)).unwrap();
    assert!(!journal.is_full());
    let line = encode(&record(0)).unwrap().len() as u64;
    let records = (1 << 20) / line + 10;
    append(&journal, 0, records).await;
    assert!(journal.bytes() >= 1 << 20, "{} bytes", journal.bytes());
    assert!(journal.is_full());
    assert!(journal.is_full());
    assert_eq!(journal.refused(), 2);
    let slot = journal.dir().to_owned();
    assert!(segments(&slot).unwrap().len() >= 8, "rotated at an eighth");

    let mut reader = journal.reader();
    let (read, at) = read_all(&mut reader);
    assert_eq!(read.len() as u64, records);
    journal.confirm(at, read.len()).unwrap();
    assert_eq!(
        segments(&slot).unwrap().len(),
        1,
        "only the live segment is left"
    );
    assert!(journal.bytes() < 1 << 18, "{} bytes", journal.bytes());
    assert!(!journal.is_full());
}

#[tokio::test]
async fn processes_sharing_a_directory_take_slots_and_a_restart_takes_what_was_left() {
    let dir = dir("slots");
    let first = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    let second = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    assert_eq!(first.dir(), dir.join("0"));
    assert_eq!(second.dir(), dir.join("1"));
    append(&first, 0, 3).await;
    append(&second, 10, 12).await;
    // The first process dies with its records unconfirmed; the next process takes its slot.
    first.close();
    drop(first);
    let third = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    assert_eq!(third.dir(), dir.join("0"));
    let (read, _) = read_all(&mut third.reader());
    assert_eq!(read, vec![0, 1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_under_load_share_writes() {
    let dir = dir("groups");
    // With fsync every append goes through the thread, each write taking a while.
    let journal = Journal::open(&JournalSettings {
        fsync: true,
        ..settings(&dir, 1 << 30)
    })
    .unwrap();
    // Four producers at once, as many requests ending together: their records share writes.
    let producers: Vec<_> = (0..4u64)
        .map(|p| {
            let journal = Arc::clone(&journal);
            std::thread::spawn(move || {
                (p * 500..(p + 1) * 500)
                    .map(|i| journal.append(record(i)).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for producer in producers {
        for written in producer.join().unwrap() {
            written.wait().await;
        }
    }
    let (read, _) = read_all(&mut journal.reader());
    assert_eq!(read.len(), 2_000);
    assert_eq!(journal.torn(), 0);
    let (records, writes) = journal.appends();
    assert_eq!(records, 2_000);
    assert!(writes * 2 < records, "{writes} writes for 2,000 records");
    eprintln!("{writes} writes for 2,000 records");
}

#[tokio::test]
async fn without_fsync_a_request_alone_gets_a_write_of_its_own() {
    let dir = dir("inline");
    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    for i in 0..10 {
        journal.append(record(i)).unwrap().wait().await;
    }
    assert_eq!(journal.appends(), (10, 10));
    let (read, _) = read_all(&mut journal.reader());
    assert_eq!(read, (0..10).collect::<Vec<_>>());
    journal.close();
    assert!(journal.append(record(10)).is_none(), "closed");
}

#[tokio::test]
async fn without_fsync_records_appended_in_one_turn_share_one_write() {
    let dir = dir("inline-group");
    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    // Requests ending in one turn of the scheduler, before the group's task runs: one group.
    let written: Vec<_> = (0..10)
        .map(|i| journal.append(record(i)).unwrap())
        .collect();
    assert_eq!(journal.appends(), (0, 0), "written by a task, not at once");
    let waits = futures_util::future::join_all(written.into_iter().map(Written::wait));
    tokio::time::timeout(std::time::Duration::from_secs(5), waits)
        .await
        .expect("the group's task wrote it");
    assert_eq!(journal.appends(), (10, 1));
    let (read, _) = read_all(&mut journal.reader());
    assert_eq!(read, (0..10).collect::<Vec<_>>());
    // The next record starts a group of its own.
    journal.append(record(10)).unwrap().wait().await;
    assert_eq!(journal.appends(), (11, 2));
}

#[tokio::test]
async fn a_request_that_never_waits_holds_back_no_other_record() {
    let dir = dir("inline-held");
    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    // The first request of the group is never polled again (its client stopped reading), and
    // another's waits are dropped (its client went away): the rest are written all the same.
    let held = journal.append(record(0)).unwrap();
    drop(journal.append(record(1)).unwrap());
    let waiting = journal.append(record(2)).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), waiting.wait())
        .await
        .expect("written while the first request still holds its wait");
    assert_eq!(journal.appends(), (3, 1));
    let (read, _) = read_all(&mut journal.reader());
    assert_eq!(read, vec![0, 1, 2]);
    drop(held);
}

#[test]
fn a_group_whose_task_never_runs_is_written_when_the_runtime_ends() {
    let dir = dir("inline-shutdown");
    let journal = Journal::open(&settings(&dir, 1 << 30)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // Appended on a runtime that shuts down before its group's task is polled.
    let written = runtime.block_on(async { journal.append(record(0)).unwrap() });
    assert_eq!(journal.appends(), (0, 0));
    drop(runtime);
    assert_eq!(journal.appends(), (1, 1));
    drop(written);
    // Outside a runtime a record is written at once.
    drop(journal.append(record(1)).unwrap());
    assert_eq!(journal.appends(), (2, 2));
    let (read, _) = read_all(&mut journal.reader());
    assert_eq!(read, vec![0, 1]);
}
