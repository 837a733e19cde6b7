//! The gateway's files and batches (V4), and batch records with their units, on both stores.

use super::super::batches::{Order, StoredBatch, StoredFile};
use super::super::store::Store;
use super::record;

fn file(project: &str, id: &str, created_us: i64, purpose: &str) -> StoredFile {
    StoredFile {
        project: project.to_owned(),
        id: id.to_owned(),
        provider: "openai".to_owned(),
        upstream_id: format!("up-{id}"),
        purpose: purpose.to_owned(),
        filename: "in.jsonl".to_owned(),
        bytes: 42,
        created_us,
        model: Some("openai/gpt-4o".to_owned()),
        lines: 3,
        estimate_micros: Some(1_234),
        estimate_tokens: 99,
    }
}

fn batch(project: &str, id: &str, created_us: i64) -> StoredBatch {
    StoredBatch {
        project: project.to_owned(),
        id: id.to_owned(),
        provider: "openai".to_owned(),
        upstream_id: format!("up-{id}"),
        api_key_id: Some("key_1".to_owned()),
        model: "openai/gpt-4o".to_owned(),
        input_file_id: "file-a".to_owned(),
        created_us,
        status: "validating".to_owned(),
        object: "{}".to_owned(),
        metered_us: None,
        metered_lines: 0,
    }
}

/// Files and batches are their project's; lists page newest first (files oldest first too);
/// metering is claimed once.
pub fn check_files_and_batches(store: &dyn Store) {
    for (i, id) in ["file-a", "file-b", "file-c"].iter().enumerate() {
        store
            .put_file(&file("p", id, 10 + i as i64, "batch"))
            .unwrap();
    }
    store
        .put_file(&file("p", "file-d", 20, "user_data"))
        .unwrap();
    store.put_file(&file("q", "file-q", 30, "batch")).unwrap();
    assert_eq!(
        store.file("p", "file-a").unwrap(),
        Some(file("p", "file-a", 10, "batch"))
    );
    assert_eq!(
        store.file("q", "file-a").unwrap(),
        None,
        "another project's"
    );
    let ids = |files: Vec<StoredFile>| files.into_iter().map(|f| f.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store
            .files("p", Some("batch"), None, Order::Desc, 2)
            .unwrap()),
        ["file-c", "file-b"]
    );
    assert_eq!(
        ids(store
            .files("p", Some("batch"), Some("file-b"), Order::Desc, 10)
            .unwrap()),
        ["file-a"]
    );
    assert_eq!(
        ids(store.files("p", None, None, Order::Desc, 10).unwrap()).len(),
        4
    );
    assert!(
        store
            .files("p", None, Some("file-q"), Order::Desc, 10)
            .unwrap()
            .is_empty()
    );
    // Oldest first, paged from either end, and empty after another project's id.
    assert_eq!(
        ids(store
            .files("p", Some("batch"), None, Order::Asc, 2)
            .unwrap()),
        ["file-a", "file-b"]
    );
    assert_eq!(
        ids(store
            .files("p", Some("batch"), Some("file-b"), Order::Asc, 10)
            .unwrap()),
        ["file-c"]
    );
    assert_eq!(
        ids(store
            .files("p", None, Some("file-c"), Order::Asc, 10)
            .unwrap()),
        ["file-d"]
    );
    assert!(
        store
            .files("p", None, Some("file-q"), Order::Asc, 10)
            .unwrap()
            .is_empty()
    );
    assert!(store.delete_file("p", "file-a").unwrap());
    assert!(!store.delete_file("q", "file-b").unwrap());

    store.put_batch(&batch("p", "batch_1", 100)).unwrap();
    store.put_batch(&batch("p", "batch_2", 200)).unwrap();
    assert_eq!(store.batch("q", "batch_1").unwrap(), None);
    store
        .update_batch("p", "batch_1", "completed", r#"{"id":"batch_1"}"#)
        .unwrap();
    let stored = store.batch("p", "batch_1").unwrap().unwrap();
    assert_eq!(
        (stored.status.as_str(), stored.object.as_str()),
        ("completed", r#"{"id":"batch_1"}"#)
    );
    let listed: Vec<_> = store
        .batches("p", None, 10)
        .unwrap()
        .into_iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(listed, ["batch_2", "batch_1"]);
    assert_eq!(store.unmetered_batches(10).unwrap().len(), 2);

    // One claim at a time; a lease that ran out may be taken again; metered, never again.
    assert!(store.claim_metering("p", "batch_1", 1_000, 2_000).unwrap());
    assert!(!store.claim_metering("p", "batch_1", 1_500, 2_500).unwrap());
    assert!(store.claim_metering("p", "batch_1", 2_001, 3_000).unwrap());
    store.metered("p", "batch_1", 2_100, 7).unwrap();
    assert!(!store.claim_metering("p", "batch_1", 9_000, 10_000).unwrap());
    let stored = store.batch("p", "batch_1").unwrap().unwrap();
    assert_eq!((stored.metered_us, stored.metered_lines), (Some(2_100), 7));
    let open: Vec<_> = store
        .unmetered_batches(10)
        .unwrap()
        .into_iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(open, ["batch_2"]);
}

/// A batch line's record keeps its batch and the units; totals sum batch spend apart, from the
/// rollups and the raw edges alike; the same line written twice counts once.
pub fn check_batch_records(store: &dyn Store) {
    const H: i64 = 1_709_211_600_000_000;
    let line = |time_us: i64, cost: i64| {
        let mut r = record(time_us, "gpt-4o", 100, 10, cost);
        r.request_id = format!("batch_1:req-{time_us}");
        r.batch_id = Some("batch_1".to_owned());
        r
    };
    let mut audio = record(H + 3, "whisper-1", 0, 0, 800);
    (audio.audio_ms, audio.characters, audio.search_units) = (8_470, 20, 2);
    let records = [
        line(H + 1, 175),
        line(H + 3_600_000_000 + 2, 125),
        audio.clone(),
    ];
    store.write(&records).unwrap();
    store.write(&records[..1]).unwrap();
    assert_eq!(
        store.record(&records[0].request_id).unwrap(),
        Some(records[0].clone())
    );
    assert_eq!(store.record(&audio.request_id).unwrap(), Some(audio));
    let t = store.total("p", H, H + 3 * 3_600_000_000).unwrap();
    assert_eq!((t.requests, t.cost_micros), (3, 1_100));
    assert_eq!((t.batch_requests, t.batch_cost_micros), (2, 300));
}
