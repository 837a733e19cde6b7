//! Aligned text columns for the terminal: text left, numbers right.

use std::fmt::Write as _;

/// Renders `rows` under `header`; columns whose header is in `right` are right-aligned.
pub fn render(header: &[&str], rows: &[Vec<String>], right: &[&str]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, cell) in cells.enumerate() {
            let width = widths.get(i).copied().unwrap_or(0);
            let sep = if i == 0 { "" } else { "  " };
            if header.get(i).is_some_and(|h| right.contains(h)) {
                let _ = write!(text, "{sep}{cell:>width$}");
            } else {
                let _ = write!(text, "{sep}{cell:<width$}");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Micro-USD as dollars with six decimals.
pub fn usd(micros: i64) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let m = micros.unsigned_abs();
    format!("{sign}{}.{:06}", m / 1_000_000, m % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let rows = vec![
            vec!["gpt-4o".to_owned(), "12".to_owned()],
            vec!["a".to_owned(), "1,234".to_owned()],
        ];
        assert_eq!(
            render(&["model", "tokens"], &rows, &["tokens"]),
            "model   tokens\ngpt-4o      12\na        1,234\n"
        );
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(usd(420_000), "0.420000");
        assert_eq!(usd(-1_500_001), "-1.500001");
    }
}
