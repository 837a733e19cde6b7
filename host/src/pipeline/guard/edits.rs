//! A guard's rewrite of the canonical view, carried into a native body: the host compares the
//! canonical texts before and after the guards, and makes the same change in the native JSON's
//! text. Nothing here knows a dialect: a new dialect needs no edit of the host.
//!
//! Two ways, for the two shapes a native body comes in:
//! - [`Edits`]: a whole body (a request, a whole answer). Each changed run of text, before and
//!   after, is replaced wherever it stands in the native body's strings; the caller checks the
//!   result by reading the edited body back into a canonical view.
//! - [`rewrite_segments`]: a stream's pieces of text, each found in one native event; the
//!   change is made by position, so a value split over events is changed where it lies.

use std::time::{Duration, Instant};

use serde_json::Value;
use similar::{Algorithm, DiffOp};

/// The longest a diff of one text may take: a hostile text is bounded (past it, the diff is
/// coarser, never wrong).
const DIFF_TIME: Duration = Duration::from_millis(20);
/// Unchanged runs shorter than this between two changes are taken into one change: a
/// placeholder and the value it replaced share a character or two by chance, which would
/// otherwise cut one replacement into pieces too short to find alone.
const MERGE_GAP: usize = 4;
/// Characters of unchanged context an insertion takes along, so that it has somewhere to go.
const INSERT_CONTEXT: usize = 12;

/// The changed runs of text, `(before, after)`.
#[derive(Debug, Default, PartialEq)]
pub struct Edits(Vec<(String, String)>);

impl Edits {
    /// The edits that turn `before`'s texts into `after`'s, or `None` when the two differ in
    /// more than their strings (a guard that added or dropped a field): then the change cannot
    /// be carried into another shape.
    pub fn between(before: &Value, after: &Value) -> Option<Self> {
        let mut edits = Self::default();
        edits.walk(before, after)?;
        Some(edits)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn walk(&mut self, before: &Value, after: &Value) -> Option<()> {
        match (before, after) {
            (Value::String(a), Value::String(b)) => {
                if a != b {
                    self.0.extend(hunks(a, b));
                }
            }
            (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
                for (a, b) in a.iter().zip(b) {
                    self.walk(a, b)?;
                }
            }
            (Value::Object(a), Value::Object(b)) if a.len() == b.len() => {
                for (key, a) in a {
                    self.walk(a, b.get(key)?)?;
                }
            }
            (a, b) if a == b => {}
            _ => return None,
        }
        Some(())
    }

    /// Makes the edits in `native`; whether each was found somewhere (if one was not, the
    /// native text differs from the canonical view there, and the change was not made).
    pub fn every_one_applies(&self, native: &mut Value) -> bool {
        self.0.iter().all(|edit| {
            let one = Self(vec![edit.clone()]);
            one.apply(native) > 0
        })
    }

    /// Makes the edits in every string of `native` (never in its keys); how many were made.
    pub fn apply(&self, native: &mut Value) -> usize {
        match native {
            Value::String(text) => {
                let mut made = 0;
                for (before, after) in &self.0 {
                    if !before.is_empty() && text.contains(before.as_str()) {
                        *text = text.replace(before.as_str(), after);
                        made += 1;
                    }
                }
                made
            }
            Value::Array(items) => items.iter_mut().map(|v| self.apply(v)).sum(),
            Value::Object(fields) => fields.values_mut().map(|v| self.apply(v)).sum(),
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        }
    }
}

/// The diff of two texts by characters, within [`DIFF_TIME`].
pub(in crate::pipeline) fn diff(before: &[char], after: &[char]) -> Vec<DiffOp> {
    let deadline = Instant::now() + DIFF_TIME;
    similar::capture_diff_slices_deadline(Algorithm::Myers, before, after, Some(deadline))
}

/// The changed runs of `before` → `after`, runs closer than [`MERGE_GAP`] taken as one, an
/// insertion taking its unchanged neighbours along.
fn hunks(before: &str, after: &str) -> Vec<(String, String)> {
    let old: Vec<char> = before.chars().collect();
    let new: Vec<char> = after.chars().collect();
    // Changes as (old range, new range), merged across short unchanged runs.
    let mut changes: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = Vec::new();
    for op in diff(&old, &new) {
        let (o, n) = (op.old_range(), op.new_range());
        if matches!(op, DiffOp::Equal { .. }) {
            continue;
        }
        match changes.last_mut() {
            Some((lo, ln)) if o.start.saturating_sub(lo.end) < MERGE_GAP => {
                lo.end = o.end;
                ln.end = n.end;
            }
            _ => changes.push((o, n)),
        }
    }
    // An insertion takes the unchanged text before it along (after it, at the start), never
    // reaching into another change.
    let bounds: Vec<(usize, usize)> = (0..changes.len())
        .map(|i| {
            let before = i.checked_sub(1).map_or(0, |p| changes[p].0.end);
            let after = changes.get(i + 1).map_or(old.len(), |next| next.0.start);
            (before, after)
        })
        .collect();
    changes
        .into_iter()
        .zip(bounds)
        .map(|((mut o, mut n), (before, after))| {
            if o.is_empty() {
                let take = (o.start - before).min(INSERT_CONTEXT);
                if take > 0 {
                    o.start -= take;
                    n.start -= take;
                } else {
                    let take = (after - o.end).min(INSERT_CONTEXT);
                    o.end += take;
                    n.end += take;
                }
            }
            (old[o].iter().collect(), new[n].iter().collect())
        })
        .collect()
}

/// A stream's text in pieces, `before` (as each piece stands in its native event) and `after`
/// (what the guards released for all of them): the new text of each piece, such that they join
/// into `after`. A deleted character leaves its piece, an inserted run goes to the piece of the
/// character before it.
pub fn rewrite_segments(pieces: &[&str], after: &str) -> Vec<String> {
    let old: Vec<char> = pieces.iter().flat_map(|p| p.chars()).collect();
    let new: Vec<char> = after.chars().collect();
    // The piece each old character belongs to.
    let owner: Vec<usize> = (pieces.iter().enumerate())
        .flat_map(|(i, p)| std::iter::repeat_n(i, p.chars().count()))
        .collect();
    let mut out = vec![String::new(); pieces.len()];
    let at = |old_index: usize| -> usize {
        match old_index.checked_sub(1) {
            Some(before) => owner.get(before).copied().unwrap_or(0),
            None => 0,
        }
    };
    for op in diff(&old, &new) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    out[owner[old_index + k]].push(new[new_index + k]);
                }
            }
            DiffOp::Delete { .. } => {}
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            }
            | DiffOp::Replace {
                old_index,
                new_index,
                new_len,
                ..
            } => {
                if out.is_empty() {
                    break;
                }
                out[at(old_index + usize::from(matches!(op, DiffOp::Replace { .. })))]
                    .extend(&new[new_index..new_index + new_len]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn a_redaction_is_carried_into_every_text_of_the_native_body() {
        let before = json!({"model": "m", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "My card is 4111 1111 1111 1111, thanks."}]});
        let after = json!({"model": "m", "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "My card is [CARD_1], thanks."}]});
        let edits = Edits::between(&before, &after).unwrap();
        let mut native = json!({"model": "claude", "thinking": {"type": "enabled"},
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "My card is 4111 1111 1111 1111, thanks.",
                 "cache_control": {"type": "ephemeral"}}]}]});
        assert_eq!(edits.apply(&mut native), 1);
        assert_eq!(
            native["messages"][0]["content"][0]["text"],
            "My card is [CARD_1], thanks."
        );
        assert_eq!(native["thinking"]["type"], "enabled");
        assert_eq!(native["system"][0]["cache_control"]["type"], "ephemeral");
    }

    #[test]
    fn a_guard_that_changed_the_shape_gives_no_edits() {
        let before = json!({"messages": [{"content": "a"}]});
        let after = json!({"messages": [{"content": "a"}, {"content": "b"}]});
        assert_eq!(Edits::between(&before, &after), None);
        let unchanged = Edits::between(&before, &before).unwrap();
        assert!(unchanged.is_empty());
    }

    #[test]
    fn two_values_and_an_insertion_each_find_their_place() {
        let edits = hunks(
            "mail a@b.io or c@d.io now",
            "mail [EMAIL_1] or [EMAIL_2] now!",
        );
        let mut text = Value::from("mail a@b.io or c@d.io now");
        Edits(edits).apply(&mut text);
        assert_eq!(text, "mail [EMAIL_1] or [EMAIL_2] now!");
    }

    #[test]
    fn a_value_split_over_stream_pieces_is_changed_where_it_lies() {
        let pieces = ["My card is 4111 11", "11 1111 1111", ", thanks."];
        let out = rewrite_segments(&pieces, "My card is [CARD], thanks.");
        assert_eq!(out.concat(), "My card is [CARD], thanks.");
        assert!(out[0].starts_with("My card is "), "{out:?}");
        assert_eq!(out[2], ", thanks.");
        // Back: the placeholder split over pieces becomes the value.
        let pieces = ["It is [CA", "RD_1] ok"];
        let out = rewrite_segments(&pieces, "It is 4111 1111 1111 1111 ok");
        assert_eq!(out.concat(), "It is 4111 1111 1111 1111 ok");
        assert!(out[1].ends_with(" ok"), "{out:?}");
    }
}
