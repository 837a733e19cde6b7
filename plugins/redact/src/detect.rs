//! The recognisers: each kind a pattern, and a check where one exists (Luhn for cards, mod 97
//! for IBANs, the address parser for IPs), so that a number that merely looks like one is left
//! alone.

use std::net::IpAddr;

use regex::Regex;

/// One thing found in a text: where, and what kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub kind: String,
}

/// A recogniser: a kind, a pattern and an optional check of what the pattern matched. A
/// built-in pattern is compiled on the first text that could hold its kind (an answer guard
/// lives for one answer, and most answers hold no digit, `@` or key prefix at all).
pub struct Recogniser {
    pub kind: String,
    source: String,
    ascii: bool,
    pattern: std::cell::OnceCell<Option<Regex>>,
    check: fn(&str) -> bool,
    /// Whether a text could hold the kind at all: a cheap test before the pattern.
    could: fn(&str) -> bool,
}

fn digit(text: &str) -> bool {
    text.bytes().any(|b| b.is_ascii_digit())
}

/// The cheap test of a built-in kind.
fn could_hold(kind: &str) -> fn(&str) -> bool {
    match kind {
        "private-key" => |t| t.contains("PRIVATE KEY"),
        "jwt" => |t| t.contains("eyJ"),
        "anthropic-key" | "openai-key" => |t| t.contains("sk-"),
        "aws-key" => |t| t.contains("AKIA") || t.contains("ASIA"),
        "email" => |t| t.contains('@'),
        "ip" => |t| digit(t) || t.contains("::"),
        "iban" | "card" | "phone" => digit,
        _ => any,
    }
}

fn any(_: &str) -> bool {
    true
}

/// A built-in kind: its name, its pattern, and the check of what the pattern matched.
pub type Kind = (&'static str, &'static str, fn(&str) -> bool);

/// The built-in kinds, in priority order (an earlier kind wins where two overlap).
pub const BUILT_IN: &[Kind] = &[
    (
        "private-key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        any,
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}",
        any,
    ),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", any),
    (
        "openai-key",
        r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}",
        any,
    ),
    ("aws-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", any),
    (
        "email",
        r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
        any,
    ),
    (
        "iban",
        r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}\b",
        iban_valid,
    ),
    ("card", r"\b[0-9](?:[ -]?[0-9]){12,18}\b", luhn_valid),
    (
        "ip",
        r"\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b|(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}",
        ip_valid,
    ),
    (
        "phone",
        r"\+[0-9]{1,3}[ .-]?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{1,4}(?:[ .-]?[0-9]{2,4}){2,4}\b|\([0-9]{3}\) ?[0-9]{3}[ .-][0-9]{4}\b|\b[0-9]{3}[.-][0-9]{3}[.-][0-9]{4}\b",
        phone_valid,
    ),
];

impl Recogniser {
    pub fn new(kind: &str, pattern: &str, check: fn(&str) -> bool) -> Result<Self, regex::Error> {
        Self::build(kind, pattern, check, false)
    }

    /// A built-in kind, matched over ASCII only (`\b`, classes): what the kinds are made of,
    /// and several times cheaper to compile than their Unicode forms (an answer guard compiles
    /// its policy once per answer).
    pub fn ascii(kind: &str, pattern: &str, check: fn(&str) -> bool) -> Result<Self, regex::Error> {
        Self::build(kind, pattern, check, true)
    }

    fn build(
        kind: &str,
        pattern: &str,
        check: fn(&str) -> bool,
        ascii: bool,
    ) -> Result<Self, regex::Error> {
        Ok(Self {
            kind: kind.to_owned(),
            source: pattern.to_owned(),
            ascii,
            pattern: std::cell::OnceCell::new(),
            check,
            could: could_hold(kind),
        })
    }

    /// Compiles the pattern now, to report an error when the config loads.
    pub fn compiled(self) -> Result<Self, regex::Error> {
        let regex = self.compile()?;
        let _ = self.pattern.set(Some(regex));
        Ok(self)
    }

    fn compile(&self) -> Result<Regex, regex::Error> {
        regex::RegexBuilder::new(&self.source)
            .unicode(!self.ascii)
            .size_limit(1 << 20)
            .build()
    }

    fn regex(&self) -> Option<&Regex> {
        self.pattern.get_or_init(|| self.compile().ok()).as_ref()
    }

    /// An operator's pattern, without a check, compiled at once (its errors are the
    /// operator's to see when the config loads).
    pub fn custom(kind: &str, pattern: &str) -> Result<Self, regex::Error> {
        let mut recogniser = Self::new(kind, pattern, any)?;
        recogniser.could = any;
        recogniser.compiled()
    }
}

/// Everything `recognisers` find in `text`, without overlaps, in order.
#[cfg(test)]
pub fn find(recognisers: &[Recogniser], text: &str) -> Vec<Found> {
    find_refs(&recognisers.iter().collect::<Vec<_>>(), text)
}

/// Everything `recognisers` find in `text`, without overlaps, in order; an earlier recogniser
/// wins where two overlap.
pub fn find_refs(recognisers: &[&Recogniser], text: &str) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    for recogniser in recognisers {
        if !(recogniser.could)(text) {
            continue;
        }
        let Some(pattern) = recogniser.regex() else {
            continue;
        };
        for m in pattern.find_iter(text) {
            if !(recogniser.check)(m.as_str()) {
                continue;
            }
            let overlaps = found.iter().any(|f| m.start() < f.end && f.start < m.end());
            if !overlaps {
                found.push(Found {
                    start: m.start(),
                    end: m.end(),
                    kind: recogniser.kind.clone(),
                });
            }
        }
    }
    found.sort_by_key(|f| f.start);
    found
}

fn digits(text: &str) -> Vec<u32> {
    text.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// A payment card number: 13 to 19 digits whose Luhn checksum holds.
pub fn luhn_valid(text: &str) -> bool {
    let digits = digits(text);
    if !(13..=19).contains(&digits.len()) || digits.iter().all(|&d| d == digits[0]) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match (i % 2, d * 2) {
            (1, doubled) if doubled > 9 => doubled - 9,
            (1, doubled) => doubled,
            _ => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// An IBAN: its country, check digits and account, whose ISO 7064 mod-97 remainder is 1.
pub fn iban_valid(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut remainder: u64 = 0;
    for c in tail.chars().chain(head.chars()) {
        let value = match c.to_digit(36) {
            Some(v) => u64::from(v),
            None => return false,
        };
        remainder = if value < 10 {
            (remainder * 10 + value) % 97
        } else {
            (remainder * 100 + value) % 97
        };
    }
    remainder == 1
}

fn ip_valid(text: &str) -> bool {
    // An IPv6 candidate needs two colons at least, which times (12:30:45) also have.
    text.parse::<IpAddr>()
        .is_ok_and(|ip| ip.is_ipv4() || text.matches(':').count() >= 3 || text.contains("::"))
        && text != "::"
}

fn phone_valid(text: &str) -> bool {
    (9..=15).contains(&digits(text).len())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn all() -> Vec<Recogniser> {
        BUILT_IN
            .iter()
            .map(|(k, p, c)| Recogniser::new(k, p, *c).unwrap())
            .collect()
    }

    fn kinds(text: &str) -> Vec<String> {
        find(&all(), text).into_iter().map(|f| f.kind).collect()
    }

    #[test]
    fn validators_tell_real_numbers_from_lookalikes() {
        assert!(luhn_valid("4111 1111 1111 1111"));
        assert!(!luhn_valid("4111 1111 1111 1112"));
        assert!(iban_valid("GB82 WEST 1234 5698 7654 32"));
        assert!(!iban_valid("GB82 WEST 1234 5698 7654 33"));
        assert_eq!(kinds("card 4111-1111-1111-1111."), ["card"]);
        assert!(kinds("order 4111-1111-1111-1112.").is_empty());
    }

    #[test]
    fn every_kind_is_recognised() {
        assert_eq!(kinds("mail bob@example.com now"), ["email"]);
        assert_eq!(kinds("call +44 20 7946 0958"), ["phone"]);
        assert_eq!(kinds("iban DE89370400440532013000"), ["iban"]);
        assert_eq!(kinds("host 10.0.0.12 and 2001:db8::1"), ["ip", "ip"]);
        assert_eq!(kinds("at 12:30:45 sharp"), Vec::<String>::new());
        assert_eq!(
            kinds("key sk-proj-abcdefghijklmnopqrstuvwx"),
            ["openai-key"]
        );
        assert_eq!(
            kinds("key sk-ant-api03-abcdefghijklmnopqrstu"),
            ["anthropic-key"]
        );
        assert_eq!(kinds("AKIAIOSFODNN7EXAMPLE"), ["aws-key"]);
        assert_eq!(
            kinds("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnop"),
            ["jwt"]
        );
        assert_eq!(
            kinds("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"),
            ["private-key"]
        );
    }
}
