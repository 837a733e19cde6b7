//! The price a ledger record should carry, computed from the built-in catalog independently of
//! the gateway's own arithmetic.

use wasmgate::catalog::Catalog;

/// Token counts as the ledger keeps them: `input` holds every prompt token, `cached` the cache
/// reads and `written` the cache writes among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    pub written: u64,
}

/// The built-in catalog's price of `t` for `provider`/`model`, in micro-USD rounded half up:
/// fresh prompt tokens at the input price, cache reads and writes at theirs (the input price
/// when the catalog has none), output tokens at the output price.
pub fn builtin(provider: &str, model: &str, t: Tokens) -> i64 {
    let info = Catalog::builtin()
        .lookup(provider, model)
        .unwrap_or_else(|| panic!("{provider}/{model} is not in the catalog"));
    let p = &info.prices;
    let input = i128::from(p.input.expect("an input price"));
    let fresh = t.input - t.cached - t.written;
    let pico = i128::from(fresh) * input
        + i128::from(t.cached) * p.cached_input.map_or(input, i128::from)
        + i128::from(t.written) * p.cache_write.map_or(input, i128::from)
        + i128::from(t.output) * i128::from(p.output.expect("an output price"));
    i64::try_from((pico + 500_000) / 1_000_000).expect("a cost in range")
}
