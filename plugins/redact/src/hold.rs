//! What of an answer's pending text may still become part of a value: the earliest place from
//! which the text to its end is the beginning of some pattern's match. The stream guard holds
//! back from there and lets what is before it go at once, rather than a whole window: prose goes
//! as it comes, while a run of digits that could still be a card number, an e-mail-ish run or a
//! `sk-` prefix waits for the character that ends it.
//!
//! Every pattern the guard acts on is compiled into one lazy DFA over all of them (match kind
//! "all", so that no pattern's threads are dropped when another matches first), and run
//! anchored from each candidate start to the text's end: a start whose run has not died could
//! still begin a match that the text to come would complete or extend. Where the DFA cannot
//! decide (a Unicode word boundary next to a non-ASCII byte, a pattern it cannot build), the
//! text is held, as before.

use std::cell::{OnceCell, RefCell};

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};

/// The patterns whose beginnings are held, compiled on the first text that needs them.
#[derive(Default)]
pub struct Tails {
    /// Each pattern, and whether it is matched over ASCII only (as the built-in kinds are).
    patterns: Vec<(String, bool)>,
    dfa: OnceCell<Option<(DFA, RefCell<Cache>)>>,
}

impl Tails {
    pub fn add(&mut self, pattern: &str, ascii: bool) {
        self.patterns.push((pattern.to_owned(), ascii));
    }

    fn compiled(&self) -> Option<&(DFA, RefCell<Cache>)> {
        self.dfa
            .get_or_init(|| {
                let dfa = self.build().ok()?;
                let cache = RefCell::new(dfa.create_cache());
                Some((dfa, cache))
            })
            .as_ref()
    }

    fn build(&self) -> Result<DFA, Box<dyn std::error::Error>> {
        let mut hirs = Vec::with_capacity(self.patterns.len());
        for (pattern, ascii) in &self.patterns {
            // Over ASCII, a class may match any byte (`[^\n]`): the DFA only tells whether a
            // match may still begin, which a byte that is no character cannot make wrong.
            let config = syntax::Config::new().unicode(!ascii).utf8(!ascii);
            hirs.push(syntax::parse_with(pattern, &config)?);
        }
        let nfa = thompson::Compiler::new()
            .configure(thompson::Config::new().which_captures(thompson::WhichCaptures::None))
            .build_many_from_hir(&hirs)?;
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .match_kind(MatchKind::All)
                    .unicode_word_boundary(true),
            )
            .build_from_nfa(nfa)?;
        Ok(dfa)
    }

    /// The first char boundary at or after `from` where a match may begin that the end of
    /// `text` leaves open; `None` when every match that can begin there is already decided.
    pub fn open_from(&self, text: &str, from: usize) -> Option<usize> {
        if self.patterns.is_empty() {
            return None;
        }
        let Some((dfa, cache)) = self.compiled() else {
            return Some(from);
        };
        let mut cache = cache.borrow_mut();
        text.char_indices()
            .map(|(at, _)| at)
            .filter(|&at| at >= from)
            .find(|&at| open_at(dfa, &mut cache, text, at))
    }
}

/// Whether a match of some pattern may begin at `at` and run past the end of `text`.
fn open_at(dfa: &DFA, cache: &mut Cache, text: &str, at: usize) -> bool {
    let input = Input::new(text).range(at..).anchored(Anchored::Yes);
    let Ok(mut state) = dfa.start_state_forward(cache, &input) else {
        return true;
    };
    for &byte in &text.as_bytes()[at..] {
        if state.is_dead() {
            return false;
        }
        state = match dfa.next_state(cache, state, byte) {
            Ok(next) if next.is_quit() => return true,
            Ok(next) => next,
            Err(_) => return true,
        };
    }
    !state.is_dead()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tails(patterns: &[&str]) -> Tails {
        let mut tails = Tails::default();
        for p in patterns {
            tails.add(p, true);
        }
        tails
    }

    #[test]
    fn only_what_can_still_grow_into_a_match_is_open() {
        let t = tails(&[
            r"\b[0-9](?:[ -]?[0-9]){12,18}\b",
            r"\bsk-[A-Za-z0-9_-]{20,}",
        ]);
        assert_eq!(t.open_from("plain words, nothing else. ", 0), None);
        assert_eq!(t.open_from("my card is 4111 11", 0), Some(11));
        assert_eq!(
            t.open_from("my card is 4111 11", 12),
            Some(16),
            "no start inside a number"
        );
        assert_eq!(t.open_from("the key sk", 0), Some(8));
        assert_eq!(t.open_from("the key s", 0), Some(8));
        assert_eq!(
            t.open_from("the task", 0),
            None,
            "`sk` inside a word is no key's start"
        );
        assert_eq!(t.open_from("4111 11 is short.", 0), None);
    }
}
