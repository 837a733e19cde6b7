//! The audit log: every change to keys, admin keys and the config, who made it, when, from
//! where, and the values before and after (never a secret: a key appears by its id, its hash
//! never). Append-only and hash-chained: each entry's hash covers its fields and the hash of the
//! entry before it, and entries are numbered from 1 without gaps, so [`verify`] finds a changed
//! or deleted row (a deleted tail is found against the last hash a reader kept).
//!
//! The statements are in `audit_rows.rs`; the table is migration V9.

use serde_json::json;
use sha2::{Digest, Sha256};

use super::keys::{AdminKey, ApiKey};

/// The hash the first entry chains to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Bytes of an entry's actor, origin or target, at most (longer ones are cut, marked `…`).
pub const FIELD_MAX: usize = 200;
/// Bytes of an entry's before or after value, at most.
pub const VALUE_MAX: usize = 16 << 10;
/// Entries one `/admin/audit` page or one read of [`AuditStore::audit_entries`] gives, at most.
pub const PAGE_MAX: usize = 1_000;

/// What was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditAction {
    KeyCreate,
    KeyUpdate,
    KeyRevoke,
    AdminKeyCreate,
    AdminKeyRevoke,
    ConfigReload,
}

impl AuditAction {
    pub const ALL: [Self; 6] = [
        Self::KeyCreate,
        Self::KeyUpdate,
        Self::KeyRevoke,
        Self::AdminKeyCreate,
        Self::AdminKeyRevoke,
        Self::ConfigReload,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::KeyCreate => "key.create",
            Self::KeyUpdate => "key.update",
            Self::KeyRevoke => "key.revoke",
            Self::AdminKeyCreate => "admin_key.create",
            Self::AdminKeyRevoke => "admin_key.revoke",
            Self::ConfigReload => "config.reload",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// A change about to be recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditChange {
    /// Who: `admin:<admin key id>`, `cli:<user>`, `config file`.
    pub actor: String,
    /// From where: `admin API`, `cli@<host>`, a reload's trigger.
    pub origin: String,
    pub action: AuditAction,
    /// What: a key's id, the config file's path.
    pub target: String,
    /// The value before and after, as JSON, secrets left out; `None` where there is none.
    pub before: Option<String>,
    pub after: Option<String>,
}

impl AuditChange {
    /// The change with every field bounded and plain (control characters escaped), as stored.
    pub fn bounded(self) -> Self {
        Self {
            actor: plain(&self.actor, FIELD_MAX),
            origin: plain(&self.origin, FIELD_MAX),
            target: plain(&self.target, FIELD_MAX),
            before: self.before.map(|v| cut(v, VALUE_MAX)),
            after: self.after.map(|v| cut(v, VALUE_MAX)),
            ..self
        }
    }
}

/// One entry of the log, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// Its place in the chain, from 1.
    pub seq: i64,
    pub at_us: i64,
    pub actor: String,
    pub origin: String,
    /// The action's name ([`AuditAction::name`]); a name this binary does not know is kept.
    pub action: String,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub prev_hash: String,
    pub hash: String,
}

impl AuditEntry {
    /// The entry that follows `prev` (`None`: the first), its hash computed.
    pub fn next(prev: Option<(i64, &str)>, at_us: i64, change: AuditChange) -> Self {
        let (seq, prev_hash) = prev.map_or((1, GENESIS.to_owned()), |(seq, hash)| {
            (seq + 1, hash.to_owned())
        });
        let mut entry = Self {
            seq,
            at_us,
            actor: change.actor,
            origin: change.origin,
            action: change.action.name().to_owned(),
            target: change.target,
            before: change.before,
            after: change.after,
            prev_hash,
            hash: String::new(),
        };
        entry.hash = entry.computed_hash();
        entry
    }

    /// The hash its fields and `prev_hash` give: SHA-256 of them as one JSON array (each string
    /// quoted and escaped, so no two entries' fields run together the same way).
    pub fn computed_hash(&self) -> String {
        let fields = json!([
            self.seq,
            self.at_us,
            self.actor,
            self.origin,
            self.action,
            self.target,
            self.before,
            self.after,
            self.prev_hash,
        ]);
        hex::encode(Sha256::digest(fields.to_string().as_bytes()))
    }

    pub fn to_json(&self) -> serde_json::Value {
        let value = |v: &Option<String>| {
            v.as_deref()
                .map(|t| serde_json::from_str::<serde_json::Value>(t).unwrap_or_else(|_| t.into()))
        };
        json!({
            "seq": self.seq,
            "at_us": self.at_us,
            "actor": self.actor,
            "origin": self.origin,
            "action": self.action,
            "target": self.target,
            "before": value(&self.before),
            "after": value(&self.after),
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        })
    }
}

/// Which entries to read: all filters must hold; `after_seq` pages on.
#[derive(Clone, Debug, Default)]
pub struct AuditFilter {
    pub actor: Option<String>,
    pub action: Option<String>,
    pub target: Option<String>,
    pub since_us: Option<i64>,
    pub until_us: Option<i64>,
    /// Only entries after this one.
    pub after_seq: i64,
    /// At most this many (up to [`PAGE_MAX`]).
    pub limit: usize,
}

/// Where the audit log is kept: the ledger's database. Calls block.
pub trait AuditStore: Send + Sync + 'static {
    /// Appends `change` at `at_us` to the chain and returns the entry as stored. Two writers at
    /// once (two replicas) cannot both take the same place: one retries after the other.
    fn append_audit(&self, change: AuditChange, at_us: i64) -> anyhow::Result<AuditEntry>;

    /// The entries `filter` selects, in chain order.
    fn audit_entries(&self, filter: &AuditFilter) -> anyhow::Result<Vec<AuditEntry>>;
}

/// A key as the log shows it before or after a change: its id, project, name, limits and
/// state, never its hash or secret.
pub fn key_value(key: &ApiKey) -> String {
    let limits = &key.limits;
    json!({
        "id": key.id,
        "project": key.project,
        "name": key.name,
        "models": limits.models,
        "expires_us": limits.expires_us,
        "rpm": limits.requests_per_minute,
        "tpm": limits.tokens_per_minute,
        "budget_micros": limits.budget.map(|b| b.micros),
        "budget_period": limits.budget.map(|b| b.period.name()),
        "guards": limits.guards,
        "tools": limits.tools,
        "passthrough": limits.passthrough,
        "revoked_us": key.revoked_us,
    })
    .to_string()
}

/// An admin key as the log shows it: never its hash or secret.
pub fn admin_key_value(key: &AdminKey) -> String {
    json!({
        "id": key.id,
        "name": key.name,
        "revoked_us": key.revoked_us,
    })
    .to_string()
}

/// What [`verify`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every entry in place: their number and the last hash (keep it to find a deleted tail).
    Intact { entries: i64, last_hash: String },
    /// The first entry where the chain breaks, and how.
    Broken { seq: i64, why: String },
}

/// Reads the whole chain from `store` a page at a time and checks each link.
pub fn verify(store: &dyn AuditStore) -> anyhow::Result<Verdict> {
    let mut last: (i64, String) = (0, GENESIS.to_owned());
    loop {
        let page = store.audit_entries(&AuditFilter {
            after_seq: last.0,
            limit: PAGE_MAX,
            ..AuditFilter::default()
        })?;
        if page.is_empty() {
            break;
        }
        for entry in &page {
            if let Some(why) = broken_link(&last, entry) {
                return Ok(Verdict::Broken {
                    seq: entry.seq,
                    why,
                });
            }
            last = (entry.seq, entry.hash.clone());
        }
    }
    Ok(Verdict::Intact {
        entries: last.0,
        last_hash: last.1,
    })
}

/// Why `entry` does not follow `prev` (its seq and hash), if it does not.
fn broken_link(prev: &(i64, String), entry: &AuditEntry) -> Option<String> {
    if entry.seq != prev.0 + 1 {
        return Some(format!(
            "entries {} to {} are missing",
            prev.0 + 1,
            entry.seq - 1
        ));
    }
    if entry.prev_hash != prev.1 {
        return Some("its prev_hash is not the hash of the entry before it".to_owned());
    }
    if entry.hash != entry.computed_hash() {
        return Some("its fields do not give its hash: the row was changed".to_owned());
    }
    None
}

/// `text` cut to `max` bytes on a character boundary, control characters escaped.
fn plain(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    cut(out, max)
}

fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max.saturating_sub('…'.len_utf8());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn change(target: &str) -> AuditChange {
        AuditChange {
            actor: "admin:adm_1".to_owned(),
            origin: "admin API".to_owned(),
            action: AuditAction::KeyCreate,
            target: target.to_owned(),
            before: None,
            after: Some(r#"{"id":"key_1"}"#.to_owned()),
        }
    }

    #[test]
    fn each_entry_chains_to_the_one_before() {
        let first = AuditEntry::next(None, 10, change("key_1"));
        assert_eq!((first.seq, first.prev_hash.as_str()), (1, GENESIS));
        let second = AuditEntry::next(Some((first.seq, &first.hash)), 11, change("key_2"));
        assert_eq!(second.seq, 2);
        assert_eq!(second.prev_hash, first.hash);
        assert_ne!(second.hash, first.hash);
        assert_eq!(second.hash, second.computed_hash());
    }

    #[test]
    fn every_field_is_in_the_hash() {
        let entry = AuditEntry::next(None, 10, change("key_1"));
        let changes: [fn(&mut AuditEntry); 9] = [
            |e| e.seq += 1,
            |e| e.at_us += 1,
            |e| e.actor.push('x'),
            |e| e.origin.push('x'),
            |e| e.action.push('x'),
            |e| e.target.push('x'),
            |e| e.before = Some("{}".to_owned()),
            |e| e.after = None,
            |e| e.prev_hash.push('x'),
        ];
        for change in changes {
            let mut changed = entry.clone();
            change(&mut changed);
            assert_ne!(changed.computed_hash(), entry.hash, "{changed:?}");
        }
    }

    #[test]
    fn fields_are_bounded_and_plain() {
        let bounded = AuditChange {
            actor: "a\nb".to_owned(),
            target: "é".repeat(FIELD_MAX),
            ..change("x")
        }
        .bounded();
        assert_eq!(bounded.actor, "a\\nb");
        assert!(bounded.target.len() <= FIELD_MAX && bounded.target.ends_with('…'));
    }

    #[test]
    fn action_names_read_back() {
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::parse(action.name()), Some(action));
        }
        assert_eq!(AuditAction::parse("key.delete"), None);
    }
}
