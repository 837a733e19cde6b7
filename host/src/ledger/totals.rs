//! What the usage questions answer: sums over a range, and per calendar bucket and model.

/// Sums over a range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_micros: i64,
    pub requests: u64,
    /// Requests answered from the response cache, and what they would have cost (`/usage/total`
    /// reads them; the model buckets leave them 0).
    pub cache_hits: u64,
    pub saved_cost_micros: i64,
    /// Batch output lines, and what they cost (`/usage/total` reads them; part of the above).
    pub batch_requests: u64,
    pub batch_cost_micros: i64,
}

impl Totals {
    pub fn add(&mut self, other: Totals) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_micros += other.cost_micros;
        self.requests += other.requests;
        self.cache_hits += other.cache_hits;
        self.saved_cost_micros += other.saved_cost_micros;
        self.batch_requests += other.batch_requests;
        self.batch_cost_micros += other.batch_cost_micros;
    }
}

/// One bucket of one model: the bucket's start in µs since the epoch, and its sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelBucket {
    pub bucket_us: i64,
    pub provider: String,
    pub model: String,
    pub totals: Totals,
}
