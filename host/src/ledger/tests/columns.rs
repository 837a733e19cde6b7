//! The declaration of `usage_records`' columns ([`crate::ledger::columns`]) against the schema
//! and the record: a column or a field missing from either side fails here.

use std::collections::BTreeSet;

use crate::ledger::columns::{self, COLUMNS, Derived, Redaction, Type};
use crate::ledger::requests::{self, RequestQuery};
use crate::ledger::{Store, UsageRecord, UsageStore};

/// Every field set, none to its default, no two alike. A struct literal without `..`: a field
/// added to the record fails to compile here until it is given a value, and then fails
/// [`check_every_field_round_trips`] until it is declared.
fn distinct() -> UsageRecord {
    UsageRecord {
        request_id: "request-1".to_owned(),
        time_us: 1_709_211_600_000_002,
        project: "project-3".to_owned(),
        api_key_id: Some("key-4".to_owned()),
        user_id: Some("user-5".to_owned()),
        user_name: Some("name-6".to_owned()),
        user_tags: vec!["tag-7".to_owned(), "tag-8".to_owned()],
        provider: Some("provider-9".to_owned()),
        model: Some("model-10".to_owned()),
        operation: "operation-11".to_owned(),
        input_tokens: 12,
        output_tokens: 13,
        cached_input_tokens: 14,
        reasoning_tokens: 15,
        cache_write_tokens: 16,
        cost_micros: Some(17),
        latency_us: 18,
        ttft_us: Some(19),
        status: 420,
        error_type: Some("error-21".to_owned()),
        estimated: true,
        guards: Some(r#"[{"guard":"guard-22"}]"#.to_owned()),
        cache_hit: true,
        saved_cost_micros: Some(23),
        bytes_in: Some(24),
        bytes_out: Some(25),
        batch_id: Some("batch-26".to_owned()),
        audio_ms: 27,
        characters: 28,
        search_units: 29,
        session_id: Some("rtsess-30".to_owned()),
    }
}

/// A record reads back whole, field for field, by each of the reads that return records.
pub fn check_every_field_round_trips(store: &dyn Store) {
    let record = distinct();
    store.write(std::slice::from_ref(&record)).unwrap();
    assert_eq!(
        store.record(&record.request_id).unwrap(),
        Some(record.clone())
    );
    assert_eq!(
        store
            .project_record(&record.project, &record.request_id)
            .unwrap(),
        Some(record.clone())
    );
    let page = requests::page(
        store,
        &RequestQuery {
            project: record.project.clone(),
            start_us: 0,
            end_us: i64::MAX,
            limit: 10,
            ..RequestQuery::default()
        },
    )
    .unwrap();
    assert_eq!(page, [record]);
}

fn declared() -> BTreeSet<&'static str> {
    let names: BTreeSet<_> = COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(names.len(), COLUMNS.len(), "a column is declared twice");
    names
}

#[test]
fn the_declaration_is_the_sqlite_table() {
    let dir = std::env::temp_dir().join(format!("wasmgate-columns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ledger.db");
    crate::ledger::sqlite::SqliteStore::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info('usage_records')")
        .unwrap();
    let table: BTreeSet<String> = stmt
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let declared: BTreeSet<String> = declared().into_iter().map(str::to_owned).collect();
    assert_eq!(declared, table);
    drop(stmt);
    drop(conn);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_declaration_is_the_postgres_table_with_its_types() {
    let (url, _cluster) = super::pg::database();
    crate::ledger::postgres::PostgresStore::open(&url)
        .unwrap()
        .count()
        .unwrap();
    let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
    let table: BTreeSet<(String, String)> = client
        .query(
            "SELECT column_name::TEXT, data_type::TEXT FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = 'usage_records'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let declared: BTreeSet<(String, String)> = COLUMNS
        .iter()
        .map(|c| {
            let array = c.kind.array();
            let name = array.trim_end_matches("[]").to_lowercase();
            (c.name.to_owned(), name)
        })
        .collect();
    assert_eq!(declared.len(), COLUMNS.len());
    assert_eq!(declared, table);
}

/// The request log selects every column read back, and every field is read back from one.
#[test]
fn the_request_log_reads_what_the_insert_writes_but_the_user_key() {
    let read: Vec<&str> = columns::read_list().split(", ").collect();
    let written: Vec<&str> = columns::insert_list().split(", ").collect();
    let mut expected = written.clone();
    expected.retain(|name| *name != "user_key");
    assert_eq!(read, expected);
    assert_eq!(written.len(), columns::COUNT);
}

/// Every text column says whether it is redacted, and the redaction reaches exactly those.
#[test]
fn text_columns_are_redacted_as_declared() {
    const SECRET: &str = "sk-secret";
    for column in COLUMNS {
        let text = column.kind == Type::Text;
        let said = !matches!(column.redaction, Redaction::None);
        assert_eq!(text, said, "{}: say whether it is redacted", column.name);
    }
    let mut record = distinct();
    let put = |text: &mut String| text.push_str(SECRET);
    for text in [
        &mut record.request_id,
        &mut record.project,
        &mut record.operation,
    ] {
        put(text);
    }
    for text in [
        &mut record.api_key_id,
        &mut record.user_id,
        &mut record.user_name,
        &mut record.provider,
        &mut record.model,
        &mut record.error_type,
        &mut record.guards,
        &mut record.batch_id,
        &mut record.session_id,
    ] {
        put(text.as_mut().unwrap());
    }
    record.user_tags.iter_mut().for_each(put);
    columns::redact(&mut record, &|text| text.replace(SECRET, "[redacted]"));
    let tags = serde_json::to_string(&record.user_tags).unwrap();
    let values = columns::insert_values(
        &record,
        Derived {
            user_key: 0,
            tags: &tags,
        },
    )
    .unwrap();
    for (column, value) in COLUMNS.iter().zip(values) {
        if let crate::ledger::values::Value::Text(text) = value {
            let kept = text.unwrap().contains(SECRET);
            let redacted = matches!(column.redaction, Redaction::Redacted(_));
            assert_eq!(kept, !redacted, "{}", column.name);
        }
    }
}
