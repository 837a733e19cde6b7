//! The counts must equal tiktoken-rs's `o200k_base().encode_ordinary(text).len()` for any text.

use std::sync::LazyLock;

use tiktoken_rs::CoreBPE;

use super::*;

static REFERENCE: LazyLock<CoreBPE> = LazyLock::new(|| tiktoken_rs::o200k_base().unwrap());
static ENCODING: LazyLock<Encoding> = LazyLock::new(|| Encoding::load().unwrap());

/// Every text whose count differs from tiktoken's, with both counts, so that one run shows all.
fn mismatches<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<(String, usize, usize)> {
    texts
        .into_iter()
        .filter_map(|text| {
            let expected = REFERENCE.encode_ordinary(text).len();
            let counted = ENCODING.count(text);
            (counted != expected).then(|| (text.chars().take(80).collect(), counted, expected))
        })
        .collect()
}

const PROSE: &str = "The quick brown fox jumps over the lazy dog. It's a sentence that \
    they've used for years; we'll keep it, and I'd say you're right. HELLO World, McDonald's \
    DON'T SHOUT'S. Dr. Smith's 3rd visit (on 2024-11-05 at 10:30am) cost $1,234.56 - 17% more.";

const RUST: &str = "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * 2).collect();\n\
    \tif v.len() > 3 && v[0] == 0 {\n\t\tprintln!(\"{:?}\", &v[..3]); // done\n\t}\n}\n";

const PYTHON: &str = "def f(x: int) -> int:\n    \"\"\"Doubles x.\"\"\"\n    return x * 2\n\n\n\
    class A(object):\n    def __init__(self):\n        self._y = {'a': [1, 2, 3]}\n";

const JSON: &str = r#"{"model":"gpt-4o","messages":[{"role":"user","content":"Hi!\nHow are you?"}],
  "temperature": 0.7, "max_tokens": 1024, "stream": true, "tools": [], "n": null}"#;

#[test]
fn counts_like_tiktoken_on_a_varied_corpus() {
    let long_word = "a".repeat(1500);
    let long_mixed = "abcXYZ".repeat(300);
    let long_cjk = "漢字仮名交じり文".repeat(60);
    let long_punct = "!?#*-=+~".repeat(200);
    let long_spaces = format!("x{}y", " ".repeat(2000));
    let long_digits = "1234567890".repeat(150);
    let long_emoji = "👍🏽".repeat(200);
    let long_random_word: String = {
        let mut rng = fastrand::Rng::with_seed(7);
        (0..1200).map(|_| rng.alphabetic()).collect()
    };
    let texts = [
        "",
        "a",
        "hello",
        " hello",
        "Hello, world!",
        PROSE,
        RUST,
        PYTHON,
        JSON,
        // Whitespace runs: the `\s+(?!\S)` and `\s*[\r\n]+` alternatives.
        "a  b   c    d",
        "trailing spaces   ",
        "   leading spaces",
        "tabs\t\tand\t \tspaces\t",
        "line\nbreaks\n\n\nand\r\nCRLF\r\n\r\n",
        " \n \n  \n\t\n",
        "    ",
        "\n",
        "x \u{a0}\u{3000} y\u{2028}z",
        // Words that are not tokens themselves, so that they merge.
        "McDonald Supercalifragilisticexpialidocious Donaudampfschifffahrtsgesellschaftskapitän \
         antidisestablishmentarianism pneumonoultramicroscopic Llanfairpwllgwyngyll",
        "camelCaseIdentifier snake_case_name SCREAMING_CASE kebab-case-name __dunder__",
        "https://example.com/a/b?c=d&e=f#g sk-proj-AbC123xYz dGhpcyBpcyBiYXNlNjQ= \
         3f786850e387550fdab836ed7e6dc881de23001b",
        "teh qiuck borwn fxo jmups oevr teh lzay dgo",
        // Numbers: one to three digits a piece.
        "1 12 123 1234 12345 123456 1234567",
        "3.14159265358979 -42 +7e10 0x1F 1,000,000",
        // Contractions, in both cases.
        "I'm you're he's she'd we've they'll it's don't I'M YOU'RE HE'S DON'T O'Neil's",
        "rock'n'roll 'quoted' ''double'' 's 't",
        // Scripts.
        "日本語のテキストと漢字、そして中文文本。한국어 문장도 있습니다.",
        "مرحبا بالعالم، هذا نص عربي مع أرقام ١٢٣ و 456.",
        "Привет, мир! Ελληνικά κείμενα. हिन्दी पाठ। ภาษาไทย",
        // Emoji, with skin tones and ZWJ sequences.
        "👍 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🧑🏿‍💻 ❤️‍🔥 🇫🇷🇯🇵 😀😃😄",
        // Combining marks, alone and after letters.
        "e\u{301}te\u{301} n\u{303}o \u{301}\u{302}\u{303} Z\u{335}\u{321}a\u{334}l\u{336}g\u{337}o",
        "\u{feff}\u{200b}zero\u{200d}width",
        &long_word,
        &long_mixed,
        &long_cjk,
        &long_punct,
        &long_spaces,
        &long_digits,
        &long_emoji,
        &long_random_word,
    ];
    assert_eq!(mismatches(texts), Vec::new());
}

/// One random character from a mix weighted towards what pre-tokenisation splits on.
fn random_char(rng: &mut fastrand::Rng) -> char {
    const PICKS: &[&str] = &[
        " ",
        "abcdefghijklmnopqrstuvwxyz",
        "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "  \t\n\r",
        "'",
        "sStTdmlLvVrReE",
        "0123456789",
        ".,;:!?-_/\\()[]{}<>\"@#$%^&*+=|~`",
        "日本語中文漢字かなカナ한국어",
        "مرحبا عربي",
        "Привет",
        "\u{301}\u{302}\u{303}\u{308}\u{327}",
        "👍🏽👨👩👧\u{200d}\u{fe0f}🇫🇷",
        "\u{a0}\u{2028}\u{3000}\u{85}",
    ];
    if rng.u8(..10) == 0 {
        // Anything, surrogates excepted.
        return loop {
            if let Some(c) = char::from_u32(rng.u32(..0x11_0000)) {
                break c;
            }
        };
    }
    let pick = PICKS[rng.usize(..PICKS.len())];
    let chars: Vec<char> = pick.chars().collect();
    chars[rng.usize(..chars.len())]
}

#[test]
fn counts_like_tiktoken_on_random_unicode() {
    let mut rng = fastrand::Rng::with_seed(0x0200_000b);
    let mut texts: Vec<String> = (0..3000)
        .map(|_| {
            let len = rng.usize(..120);
            (0..len).map(|_| random_char(&mut rng)).collect()
        })
        .collect();
    // Random ASCII words long enough for the heap merge (100 bytes and more).
    texts.extend((0..50).map(|_| {
        let len = rng.usize(100..400);
        (0..len).map(|_| rng.alphanumeric()).collect::<String>()
    }));
    assert_eq!(mismatches(texts.iter().map(String::as_str)), Vec::new());
}

#[test]
fn the_index_holds_every_ordinary_token() {
    // o200k_base: 200,000 ranks with two special ones among the last, which counting never
    // produces.
    assert_eq!(ENCODING.vocabulary.len(), 199_998);
    assert_eq!(ENCODING.vocabulary.rank(b"hello"), Some(24912));
    assert_eq!(ENCODING.vocabulary.rank(b"<|endoftext|>"), None);
    assert_eq!(Tokenizer.count("hello"), 1);
    assert_eq!(Tokenizer.count(""), 0);
}

/// RssAnon of this process, in KiB.
fn rss_anon_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `text` repeated up to 1 KiB, cut at a character boundary.
fn one_kib(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().cycle() {
        if out.len() + c.len_utf8() > 1024 {
            return out;
        }
        out.push(c);
    }
    out
}

/// The figures in BENCHMARKS.md ("The tokenizer"), ours against tiktoken-rs in one process:
/// `cargo test --release -p wasmgate --lib tokenizer::tests::figures -- --ignored --nocapture`
#[test]
#[ignore = "a measurement; run with --release"]
fn figures() {
    use std::hint::black_box;
    use std::time::Instant;

    let texts = [
        ("English", one_kib(PROSE)),
        ("code", one_kib(&format!("{RUST}{PYTHON}{JSON}"))),
        (
            "CJK",
            one_kib("日本語のテキストと漢字、そして中文文本。한국어 문장도 있습니다. "),
        ),
    ];
    let time_counts = |count: &dyn Fn(&str) -> usize| -> Vec<(usize, f64)> {
        texts
            .iter()
            .map(|(_, text)| {
                let tokens = count(text);
                let rounds = 3000;
                let start = Instant::now();
                for _ in 0..rounds {
                    black_box(count(black_box(text)));
                }
                (
                    tokens,
                    start.elapsed().as_nanos() as f64 / f64::from(rounds),
                )
            })
            .collect()
    };
    let before = rss_anon_kib();
    let start = Instant::now();
    let ours = Encoding::load().unwrap();
    let ours_load = start.elapsed();
    let ours_loaded = rss_anon_kib();
    let ours_times = time_counts(&|t| ours.count(t));
    let ours_used = rss_anon_kib();

    let start = Instant::now();
    let theirs = tiktoken_rs::o200k_base().unwrap();
    let theirs_load = start.elapsed();
    let theirs_loaded = rss_anon_kib();
    let theirs_times = time_counts(&|t| theirs.encode_ordinary(t).len());
    let theirs_used = rss_anon_kib();

    eprintln!(
        "ours:     load {ours_load:?}, RssAnon +{} KiB loaded, +{} KiB after counting",
        ours_loaded - before,
        ours_used - before
    );
    eprintln!(
        "tiktoken: load {theirs_load:?}, RssAnon +{} KiB loaded, +{} KiB after counting",
        theirs_loaded - ours_used,
        theirs_used - ours_used
    );
    for (((name, _), (n, ours)), (m, theirs)) in texts.iter().zip(ours_times).zip(theirs_times) {
        assert_eq!(n, m);
        eprintln!("1 KiB {name}: {n} tokens, ours {ours:.0} ns, tiktoken {theirs:.0} ns");
    }
}
