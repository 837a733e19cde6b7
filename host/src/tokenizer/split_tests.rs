//! The splitter must yield exactly the regex's pieces: unit cases for each of the pattern's
//! alternatives, then generated ASCII weighted toward the cases where they meet.

use std::sync::LazyLock;

use fancy_regex::Regex;
use proptest::prelude::*;

use super::ascii_pieces;
use crate::tokenizer::O200K_PATTERN;

static REGEX: LazyLock<Regex> = LazyLock::new(|| Regex::new(O200K_PATTERN).unwrap());

fn by_regex(text: &str) -> Vec<&str> {
    REGEX
        .find_iter(text)
        .map(|piece| piece.unwrap().as_str())
        .collect()
}

fn by_splitter(text: &str) -> Vec<&str> {
    ascii_pieces(text).expect("ASCII text").collect()
}

/// Checks the expected pieces against the regex too, so a wrong expectation fails here.
fn splits(text: &str, expected: &[&str]) {
    assert_eq!(by_regex(text), expected, "the regex on {text:?}");
    assert_eq!(by_splitter(text), expected, "the splitter on {text:?}");
}

#[test]
fn words_take_a_prefix_then_capitals_then_lowercase() {
    splits("Hello world", &["Hello", " world"]);
    splits("HelloWorld", &["Hello", "World"]);
    splits("HELLOworld", &["HELLOworld"]);
    splits("helloWORLD", &["hello", "WORLD"]);
    splits(".word\tword", &[".word", "\tword"]);
    splits("...word", &["...", "word"]);
    splits("\x01word \x0bA", &["\x01word", " ", "\x0bA"]);
}

#[test]
fn contractions_follow_a_word_in_any_case() {
    splits(
        "don't I'M they'RE we'Ll",
        &["don't", " I'M", " they'RE", " we'Ll"],
    );
    splits("it'sa o'x 'd", &["it's", "a", " o", "'x", " '", "d"]);
    splits("we'l x'v", &["we", "'l", " x", "'v"]);
}

#[test]
fn numbers_go_in_threes() {
    splits("1234567 12a", &["123", "456", "7", " ", "12", "a"]);
}

#[test]
fn symbols_take_one_space_before_and_line_breaks_after() {
    splits("a , b ,\n\r\nc", &["a", " ,", " b", " ,\n\r\n", "c"]);
    splits("x //\n/y", &["x", " //\n/", "y"]);
    splits("\t,", &["\t", ","]);
}

#[test]
fn whitespace_leaves_its_last_character_to_the_next_piece() {
    splits("a   b", &["a", "  ", " b"]);
    splits("a \t\n  \n  b", &["a", " \t\n  \n", " ", " b"]);
    splits("a  ", &["a", "  "]);
    splits("a \t1", &["a", " ", "\t", "1"]);
    splits("\r\n", &["\r\n"]);
}

#[test]
fn other_text_is_left_to_the_regex() {
    assert!(ascii_pieces("café").is_none());
    assert!(ascii_pieces("").is_some_and(|mut pieces| pieces.next().is_none()));
}

/// ASCII weighted toward where the alternatives meet: apostrophes and the contraction letters,
/// case changes, digits, runs of spaces, line breaks, tabs and other whitespace, punctuation
/// (with `/`), control characters.
fn tricky_ascii() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("'".to_owned()),
        "[sStTmMdDrReEvVlL]{1,2}",
        "[a-z]{1,6}",
        "[A-Z]{1,4}",
        "[0-9]{1,5}",
        " {1,4}",
        "[\r\n]{1,3}",
        "[\t\x0b\x0c]",
        "[.,;:!?/()\"#$%&*+<=>@^_`{|}~\\[\\]-]{1,3}",
        "[\x00-\x08\x0e-\x1f\x7f]",
        "[ -~]{1,4}",
    ];
    prop::collection::vec(fragment, 0..24).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn yields_the_regex_pieces(text in tricky_ascii()) {
        prop_assert_eq!(by_splitter(&text), by_regex(&text));
    }

    #[test]
    fn yields_the_regex_pieces_on_any_ascii(text in "[\x00-\x7f]{0,64}") {
        prop_assert_eq!(by_splitter(&text), by_regex(&text));
    }
}

/// A driver for callgrind, not a check: splits about 1 KiB of English prose `SPLIT_ROUNDS`
/// times with `SPLIT_WAY` (`regex` or `splitter`); the difference between two runs' totals over
/// the difference in rounds is the instructions per KiB (see BENCHMARKS.md).
#[test]
#[ignore = "a measurement driver; run under callgrind"]
fn split_rounds_for_callgrind() {
    let sentence = "The quick brown fox jumps over the lazy dog. It's a sentence that they've \
        used for years; we'll keep it, and I'd say you're right. Dr. Smith's 3rd visit cost \
        $1,234.56 - 17% more.\n";
    let text = sentence.repeat(1024 / sentence.len() + 1);
    let rounds: usize = std::env::var("SPLIT_ROUNDS").map_or(0, |n| n.parse().unwrap());
    let way = std::env::var("SPLIT_WAY").unwrap_or_default();
    // Both ways pay the regex's compilation, so that it cancels out of the difference.
    let pieces = by_regex(&text).len();
    for _ in 0..rounds {
        let n = match way.as_str() {
            "regex" => by_regex(std::hint::black_box(&text)).len(),
            _ => by_splitter(std::hint::black_box(&text)).len(),
        };
        assert_eq!(n, pieces);
    }
    eprintln!("{} bytes, {pieces} pieces, {rounds} rounds", text.len());
}
