//! The audit log on both databases: entries chain, filters select, and a row changed or deleted
//! behind the gateway's back is found by `verify`.

use crate::ledger::audit::{self, AuditAction, AuditChange, AuditFilter, AuditStore, Verdict};
use crate::ledger::sql::SqlStore;

fn change(action: AuditAction, target: &str) -> AuditChange {
    AuditChange {
        actor: "admin:adm_1".to_owned(),
        origin: "admin API".to_owned(),
        action,
        target: target.to_owned(),
        before: None,
        after: Some(format!(r#"{{"id":"{target}"}}"#)),
    }
}

fn check_audit<S: SqlStore + AuditStore>(store: &S) {
    assert_eq!(
        audit::verify(store).unwrap(),
        Verdict::Intact {
            entries: 0,
            last_hash: audit::GENESIS.to_owned()
        }
    );
    let first = store
        .append_audit(change(AuditAction::KeyCreate, "key_1"), 100)
        .unwrap();
    store
        .append_audit(change(AuditAction::KeyUpdate, "key_1"), 200)
        .unwrap();
    let last = store
        .append_audit(change(AuditAction::KeyRevoke, "key_2"), 300)
        .unwrap();
    assert_eq!((first.seq, last.seq), (1, 3));
    assert_eq!(
        audit::verify(store).unwrap(),
        Verdict::Intact {
            entries: 3,
            last_hash: last.hash.clone()
        }
    );

    let select = |filter: AuditFilter| -> Vec<i64> {
        let filter = AuditFilter {
            limit: if filter.limit == 0 { 10 } else { filter.limit },
            ..filter
        };
        store
            .audit_entries(&filter)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect()
    };
    assert_eq!(select(AuditFilter::default()), [1, 2, 3]);
    let target = |t: &str| AuditFilter {
        target: Some(t.to_owned()),
        ..AuditFilter::default()
    };
    assert_eq!(select(target("key_1")), [1, 2]);
    let action = AuditFilter {
        action: Some("key.revoke".to_owned()),
        ..AuditFilter::default()
    };
    assert_eq!(select(action), [3]);
    let window = AuditFilter {
        since_us: Some(150),
        until_us: Some(300),
        ..AuditFilter::default()
    };
    assert_eq!(select(window), [2]);
    let page = AuditFilter {
        after_seq: 1,
        limit: 1,
        ..AuditFilter::default()
    };
    assert_eq!(select(page), [2]);

    // A value changed behind the gateway's back.
    store
        .write_sql(|db| {
            db.execute(
                "UPDATE audit_log SET after_value = $1 WHERE seq = 2",
                &[r#"{"id":"key_9"}"#.into()],
            )
        })
        .unwrap();
    let Verdict::Broken { seq, why } = audit::verify(store).unwrap() else {
        panic!("a changed row is found");
    };
    assert_eq!(seq, 2, "{why}");
    assert!(why.contains("changed"), "{why}");

    // A row deleted (the one changed, so the rest would otherwise chain).
    store
        .write_sql(|db| db.execute("DELETE FROM audit_log WHERE seq = 2", &[]))
        .unwrap();
    let Verdict::Broken { seq, why } = audit::verify(store).unwrap() else {
        panic!("a deleted row is found");
    };
    assert_eq!(seq, 3, "{why}");
    assert!(why.contains("missing"), "{why}");
}

#[test]
fn the_audit_log_chains_and_finds_tampering_on_sqlite() {
    check_audit(&crate::ledger::sqlite::SqliteStore::in_memory().unwrap());
}

#[test]
fn the_audit_log_chains_and_finds_tampering_on_postgres() {
    let (url, _cluster) = super::pg::database();
    check_audit(&crate::ledger::postgres::PostgresStore::open(&url).unwrap());
}

/// Two writers appending at once (two replicas on one database) never take the same place.
#[test]
fn writers_at_once_keep_one_chain() {
    let dir = std::env::temp_dir().join(format!("wasmgate-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ledger.db");
    let stores: Vec<_> = (0..2)
        .map(|_| crate::ledger::sqlite::SqliteStore::open(&path).unwrap())
        .collect();
    std::thread::scope(|scope| {
        for (n, store) in stores.iter().enumerate() {
            scope.spawn(move || {
                for i in 0..20 {
                    store
                        .append_audit(change(AuditAction::KeyCreate, &format!("key_{n}_{i}")), i)
                        .unwrap();
                }
            });
        }
    });
    assert!(matches!(
        audit::verify(&stores[0]).unwrap(),
        Verdict::Intact { entries: 40, .. }
    ));
    let _ = std::fs::remove_dir_all(&dir);
}
