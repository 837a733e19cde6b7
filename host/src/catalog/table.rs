//! The catalog as an aligned text table, for `wasmgate models`.

use std::fmt::Write as _;

use super::by_provider::Catalog;
use super::model_info::{Kind, ModelInfo};

/// Which models to show; `None` shows all.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    pub provider: Option<&'a str>,
    pub kind: Option<Kind>,
}

impl Filter<'_> {
    fn admits(&self, info: &ModelInfo) -> bool {
        self.provider.is_none_or(|p| p == info.provider) && self.kind.is_none_or(|k| k == info.kind)
    }
}

const HEADER: [&str; 11] = [
    "PROVIDER",
    "MODEL",
    "KIND",
    "CONTEXT",
    "TOOLS",
    "VISION",
    "JSON",
    "IN $/M",
    "OUT $/M",
    "CACHED $/M",
    "$/IMAGE",
];
/// The column of prices by other units than tokens and images.
const OTHER: &str = "OTHER $";
/// Columns from CONTEXT on hold numbers or flags and are right-aligned.
const FIRST_RIGHT_ALIGNED: usize = 3;

/// The models `filter` admits, one per line under a header, columns aligned; prices in USD per
/// million tokens (and per image, a column shown only when a listed model has that price), `-`
/// where unknown.
pub fn render(catalog: &Catalog, filter: &Filter<'_>) -> String {
    let models: Vec<&ModelInfo> = catalog.models().filter(|m| filter.admits(m)).collect();
    let images = models.iter().any(|m| m.prices.per_image.is_some());
    // Rerank, audio and speech prices, in a column of their own when a listed model has one.
    let others = models.iter().any(|m| !other_prices(m).is_empty());
    let mut header: Vec<String> = HEADER[..HEADER.len() - 1]
        .iter()
        .map(|&h| h.to_owned())
        .collect();
    if images {
        header.push(HEADER[HEADER.len() - 1].to_owned());
    }
    if others {
        header.push(OTHER.to_owned());
    }
    let rows: Vec<Vec<String>> = models
        .iter()
        .map(|m| {
            let mut row = vec![
                m.provider.clone(),
                m.model.clone(),
                m.kind.name().to_owned(),
                m.context_window.map_or_else(|| "-".to_owned(), tokens),
                flag(m.capabilities.tools),
                flag(m.capabilities.vision),
                flag(m.capabilities.json_mode),
                usd_per_mtok(m.prices.input),
                usd_per_mtok(m.prices.output),
                usd_per_mtok(m.prices.cached_input),
            ];
            if images {
                row.push(usd_per_image(m.prices.per_image));
            }
            if others {
                let prices = other_prices(m);
                row.push(if prices.is_empty() {
                    "-".to_owned()
                } else {
                    prices
                });
            }
            row
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(String::len).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, &width)) in row.iter().zip(&widths).enumerate() {
            let sep = if i == 0 { "" } else { "  " };
            // Writing to a String cannot fail.
            let _ = if i < FIRST_RIGHT_ALIGNED {
                write!(line, "{sep}{cell:<width$}")
            } else {
                write!(line, "{sep}{cell:>width$}")
            };
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn flag(on: bool) -> String {
    if on { "yes" } else { "-" }.to_owned()
}

/// 128000 → `128K`, 1048576 → `1.05M`.
fn tokens(n: u64) -> String {
    if n >= 1_000_000 {
        let hundredths = (n + 5_000) / 10_000;
        let text = format!("{}.{:02}", hundredths / 100, hundredths % 100);
        format!("{}M", text.trim_end_matches('0').trim_end_matches('.'))
    } else if n >= 1_000 {
        format!("{}K", (n + 500) / 1_000)
    } else {
        n.to_string()
    }
}

/// A pico-USD-per-token price as USD per million tokens: the same digits, shifted six places
/// (1 pico-USD per token = 1 micro-USD per million). At least two decimals, at most six.
fn usd_per_mtok(pico: Option<i64>) -> String {
    let Some(p) = pico else {
        return "-".to_owned();
    };
    let fraction = format!("{:06}", p % 1_000_000);
    let fraction = fraction.trim_end_matches('0');
    format!("{}.{:0<2}", p / 1_000_000, fraction)
}

/// Per thousand searches, per minute of audio, per million characters and per million audio
/// tokens (in, cached, out), as published.
fn other_prices(m: &ModelInfo) -> String {
    let p = &m.prices;
    [
        p.per_search_unit
            .map(|p| format!("{}/1k searches", usd_per_mtok(Some(p / 1_000)))),
        p.per_audio_second
            .map(|p| format!("{}/min", usd_per_mtok(Some((p * 60 + 500_000) / 1_000_000)))),
        p.per_character
            .map(|p| format!("{}/M chars", usd_per_mtok(Some(p)))),
        p.audio_input
            .map(|p| format!("audio {} in", usd_per_mtok(Some(p)))),
        p.cached_audio_input
            .map(|p| format!("audio {} cached", usd_per_mtok(Some(p)))),
        p.audio_output
            .map(|p| format!("audio {} out", usd_per_mtok(Some(p)))),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

/// A pico-USD price of one image in USD: at least two decimals, at most six.
fn usd_per_image(pico: Option<i64>) -> String {
    usd_per_mtok(pico.map(|p| (p + 500_000) / 1_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_search_audio_and_character_prices_as_published() {
        let catalog = Catalog::builtin();
        let price = |provider: &str, model: &str| {
            other_prices(catalog.lookup(provider, model).expect("in the catalog"))
        };
        assert_eq!(price("cohere", "rerank-v3.5"), "2.00/1k searches");
        assert_eq!(price("openai", "whisper-1"), "0.006/min");
        assert_eq!(price("openai", "tts-1"), "15.00/M chars");
        assert_eq!(price("groq", "whisper-large-v3"), "0.00185/min");
        assert_eq!(price("openai", "gpt-4o-mini"), "");
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(tokens(128_000), "128K");
        assert_eq!(tokens(131_072), "131K");
        assert_eq!(tokens(1_048_576), "1.05M");
        assert_eq!(tokens(1_000_000), "1M");
        assert_eq!(tokens(2_000_000), "2M");
        assert_eq!(tokens(512), "512");
        assert_eq!(usd_per_mtok(Some(150_000)), "0.15");
        assert_eq!(usd_per_mtok(Some(5_000_000)), "5.00");
        assert_eq!(usd_per_mtok(Some(2_800)), "0.0028");
        assert_eq!(usd_per_mtok(Some(3_625)), "0.003625");
        assert_eq!(usd_per_mtok(Some(0)), "0.00");
        assert_eq!(usd_per_mtok(None), "-");
        assert_eq!(usd_per_image(Some(42_000_000_000)), "0.042");
        assert_eq!(usd_per_image(Some(40_000_000_000)), "0.04");
    }

    #[test]
    fn renders_an_aligned_filtered_table() {
        let catalog = Catalog::builtin();
        let text = render(
            catalog,
            &Filter {
                provider: Some("anthropic"),
                kind: Some(Kind::Chat),
            },
        );
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("PROVIDER"));
        assert!(lines.len() > 5);
        assert!(lines[1..].iter().all(|l| l.starts_with("anthropic ")));
        assert!(text.contains("claude-sonnet-4-6"));
        // Right-aligned columns end together.
        let width = lines[0].len();
        assert!(lines.iter().all(|l| l.len() == width));
        let none = render(
            catalog,
            &Filter {
                provider: Some("anthropic"),
                kind: Some(Kind::Images),
            },
        );
        assert_eq!(none.lines().count(), 1);
        assert!(!text.contains("$/IMAGE"));
        let images = render(
            catalog,
            &Filter {
                provider: Some("openai"),
                kind: Some(Kind::Images),
            },
        );
        assert!(
            images
                .lines()
                .next()
                .is_some_and(|h| h.ends_with("$/IMAGE"))
        );
        assert!(images.contains("0.042"));
    }
}
