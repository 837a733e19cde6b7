//! A verified token's claims, mapped as its issuer's `claims:` says into an [`Identity`]: the
//! project, the user and the key-like limits, each checked against the bounds a stored key's
//! are (a token is no more trusted to be small than a request body is).

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::refusal::Refusal;
use crate::config::{JwtBudgetPeriod, JwtIssuer};
use crate::ledger::keys::{check_project, usd_to_micros};
use crate::ledger::{Budget, BudgetPeriod, KeyLimits};

/// Bytes of a user id, at most: the bound a request body's user id has.
const USER_MAX: usize = 256;
/// Items of a list claim read, at most (the limits' own bounds are lower: past them the token
/// is refused, rather than its list read without end).
const LIST_MAX: usize = 64;
/// Hex digits of the key id's hash: 96 bits, so that two subjects never share counters.
const ID_HEX: usize = 24;

/// Who a verified token stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub project: String,
    /// `jwt:` and 24 hex digits of SHA-256 over the issuer and the subject.
    pub key_id: String,
    pub user: Option<String>,
    pub limits: KeyLimits,
}

/// The identity `claims` (verified, of `issuer`) stand for.
pub(super) fn identity(
    issuer: &JwtIssuer,
    claims: &Map<String, Value>,
) -> Result<Identity, Refusal> {
    let map = &issuer.claims;
    let Some(Value::String(subject)) = claims.get("sub") else {
        return Err(Refusal::InvalidClaim("sub".to_owned()));
    };
    let project = match claims.get(&map.project) {
        Some(Value::String(project)) if check_project(project).is_ok() => project.clone(),
        None | Some(Value::Null) => issuer
            .project
            .clone()
            .ok_or_else(|| Refusal::MissingClaim(crate::clip::echo(&map.project).into_owned()))?,
        Some(_) => return Err(Refusal::invalid(&map.project)),
    };
    let user = match claims.get(&map.user) {
        None | Some(Value::Null) => None,
        Some(Value::String(user))
            if user.len() <= USER_MAX && !user.chars().any(crate::clip::unprintable) =>
        {
            Some(user.clone())
        }
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err(Refusal::invalid(&map.user)),
    };
    let period = match issuer.budget_period {
        JwtBudgetPeriod::Day => BudgetPeriod::Day,
        JwtBudgetPeriod::Month => BudgetPeriod::Month,
        JwtBudgetPeriod::Total => BudgetPeriod::Total,
    };
    let limits = KeyLimits {
        models: list(claims, map.models.as_deref())?,
        guards: list(claims, map.guards.as_deref())?,
        requests_per_minute: whole(claims, map.requests_per_minute.as_deref())?,
        tokens_per_minute: whole(claims, map.tokens_per_minute.as_deref())?,
        budget: match named(claims, map.budget_usd.as_deref()) {
            None => None,
            Some((name, value)) => Some(Budget {
                micros: value
                    .as_f64()
                    .and_then(usd_to_micros)
                    .ok_or_else(|| Refusal::invalid(name))?,
                period,
            }),
        },
        ..KeyLimits::default()
    };
    limits.check().map_err(|_| Refusal::LimitsOutOfBounds)?;
    Ok(Identity {
        project,
        key_id: key_id(&issuer.issuer, subject),
        user,
        limits,
    })
}

/// `jwt:` and a hash of `issuer` and `subject`: bounded and safe in any store, the same on
/// every replica, and different for the same subject of two issuers.
fn key_id(issuer: &str, subject: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(issuer.as_bytes());
    hash.update([0]);
    hash.update(subject.as_bytes());
    let hex = hex::encode(hash.finalize());
    format!("jwt:{}", &hex[..ID_HEX])
}

/// The claim the config names `claim`, with its name, if the config names one and the token
/// has it (a `null` counts as absent).
fn named<'a, 'c>(
    claims: &'c Map<String, Value>,
    claim: Option<&'a str>,
) -> Option<(&'a str, &'c Value)> {
    let name = claim?;
    claims.get(name).filter(|v| !v.is_null()).map(|v| (name, v))
}

/// A list claim: an array of strings, or one string of space-separated items (as OAuth's
/// `scope` is written).
fn list(claims: &Map<String, Value>, claim: Option<&str>) -> Result<Vec<String>, Refusal> {
    let Some((name, value)) = named(claims, claim) else {
        return Ok(Vec::new());
    };
    let items: Vec<String> = match value {
        Value::String(text) => text
            .split_ascii_whitespace()
            .take(LIST_MAX + 1)
            .map(str::to_owned)
            .collect(),
        Value::Array(items) if items.len() <= LIST_MAX => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| Refusal::invalid(name))?,
        Value::Array(_) => return Err(Refusal::LimitsOutOfBounds),
        _ => return Err(Refusal::invalid(name)),
    };
    if items.len() > LIST_MAX {
        return Err(Refusal::LimitsOutOfBounds);
    }
    Ok(items)
}

/// A whole-number claim.
fn whole(claims: &Map<String, Value>, claim: Option<&str>) -> Result<Option<i64>, Refusal> {
    match named(claims, claim) {
        None => Ok(None),
        Some((name, value)) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| Refusal::invalid(name)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn issuer(project: Option<&str>) -> JwtIssuer {
        let yaml = format!(
            "{{issuer: https://idp, jwks_url: 'https://idp/jwks', audiences: [wasmgate], \
             project: {}, claims: {{models: models, guards: guards, requests_per_minute: rpm, \
             budget_usd: budget}}}}",
            project.unwrap_or("null")
        );
        serde_yaml::from_str(&yaml).unwrap()
    }

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn claims_name_the_project_user_and_limits() {
        let identity = identity(
            &issuer(None),
            &claims(
                json!({"sub": "svc-1", "project": "acme", "models": "gpt-4o* claude-*",
                "guards": ["pii"], "rpm": 10, "budget": 2.5}),
            ),
        )
        .unwrap();
        assert_eq!(identity.project, "acme");
        assert_eq!(identity.user.as_deref(), Some("svc-1"));
        assert_eq!(identity.limits.models, ["gpt-4o*", "claude-*"]);
        assert_eq!(identity.limits.guards, ["pii"]);
        assert_eq!(identity.limits.requests_per_minute, Some(10));
        assert_eq!(
            identity.limits.budget,
            Some(Budget {
                micros: 2_500_000,
                period: BudgetPeriod::Month
            })
        );
        assert!(identity.key_id.starts_with("jwt:") && identity.key_id.len() == 4 + ID_HEX);
    }

    #[test]
    fn the_key_id_is_stable_and_separates_issuers_and_subjects() {
        assert_eq!(key_id("a", "s"), key_id("a", "s"));
        assert_ne!(key_id("a", "s"), key_id("b", "s"));
        assert_ne!(key_id("a", "s"), key_id("a", "t"));
        // The separator keeps `ab`+`c` apart from `a`+`bc`.
        assert_ne!(key_id("ab", "c"), key_id("a", "bc"));
    }

    #[test]
    fn the_issuer_project_stands_in_for_an_absent_claim() {
        let sub = || claims(json!({"sub": "u"}));
        assert_eq!(
            identity(&issuer(Some("ops")), &sub()).unwrap().project,
            "ops"
        );
        assert_eq!(
            identity(&issuer(None), &sub()),
            Err(Refusal::MissingClaim("project".to_owned()))
        );
    }

    #[test]
    fn claims_out_of_shape_or_bounds_are_refused_without_their_values() {
        let refused = |extra: Value| {
            let mut all = claims(json!({"sub": "u", "project": "acme"}));
            all.extend(claims(extra));
            identity(&issuer(None), &all).unwrap_err()
        };
        assert_eq!(
            refused(json!({"project": "no spaces"})),
            Refusal::InvalidClaim("project".to_owned())
        );
        assert_eq!(
            refused(json!({"rpm": "ten"})),
            Refusal::InvalidClaim("rpm".to_owned())
        );
        assert_eq!(refused(json!({"rpm": 0})), Refusal::LimitsOutOfBounds);
        assert_eq!(
            refused(json!({"budget": -1})),
            Refusal::InvalidClaim("budget".to_owned())
        );
        assert_eq!(
            refused(json!({"models": vec!["m"; LIST_MAX + 1]})),
            Refusal::LimitsOutOfBounds
        );
        assert_eq!(
            refused(json!({"guards": "bad name!"})),
            Refusal::LimitsOutOfBounds
        );
        assert_eq!(
            refused(json!({"sub": 7})),
            Refusal::InvalidClaim("sub".to_owned())
        );
    }
}
