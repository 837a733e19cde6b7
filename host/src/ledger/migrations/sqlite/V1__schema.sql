-- V1: the ledger's schema as wasmgate created it before versioned migrations (2026-11).
-- A database made before then has no history table: it is brought to this schema by the
-- column checks of ledger::sqlite::legacy and recorded as V1 without running this file.
CREATE TABLE IF NOT EXISTS usage_records (
    request_id TEXT NOT NULL,
    time_us INTEGER NOT NULL,
    project TEXT NOT NULL,
    api_key_id TEXT,
    user_key INTEGER NOT NULL,
    user_id TEXT,
    user_name TEXT,
    user_tags TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    operation TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    cost_micros INTEGER,
    latency_us INTEGER NOT NULL,
    status INTEGER NOT NULL,
    error_type TEXT,
    estimated INTEGER NOT NULL,
    ttft_us INTEGER,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0
);
-- The request log's indexes (see ledger::requests): a page's keyset is (time_us, request_id).
CREATE INDEX IF NOT EXISTS usage_records_by_project_time_id
    ON usage_records (project, time_us, request_id);
CREATE INDEX IF NOT EXISTS usage_records_by_project_user
    ON usage_records (project, user_key, time_us, request_id);
CREATE INDEX IF NOT EXISTS usage_records_failed
    ON usage_records (project, time_us, request_id) WHERE (status < 200 OR status >= 300);
CREATE INDEX IF NOT EXISTS usage_records_by_request ON usage_records (request_id);
CREATE TABLE IF NOT EXISTS usage_users (
    user_key INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    user_id TEXT NOT NULL,
    user_name TEXT NOT NULL,
    user_tags TEXT NOT NULL,
    UNIQUE (project, user_id, user_name, user_tags)
);
CREATE TABLE IF NOT EXISTS usage_hourly_models (
    project TEXT NOT NULL,
    hour_us INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    latency_us INTEGER NOT NULL DEFAULT 0,
    ttft_us INTEGER NOT NULL DEFAULT 0,
    ttft_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, hour_us, provider, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_daily_models (
    project TEXT NOT NULL,
    day_us INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    latency_us INTEGER NOT NULL DEFAULT 0,
    ttft_us INTEGER NOT NULL DEFAULT 0,
    ttft_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, day_us, provider, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_hourly_users (
    project TEXT NOT NULL,
    user_key INTEGER NOT NULL,
    hour_us INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    latency_us INTEGER NOT NULL DEFAULT 0,
    ttft_us INTEGER NOT NULL DEFAULT 0,
    ttft_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, hour_us, user_key, provider, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_daily_users (
    project TEXT NOT NULL,
    user_key INTEGER NOT NULL,
    day_us INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    latency_us INTEGER NOT NULL DEFAULT 0,
    ttft_us INTEGER NOT NULL DEFAULT 0,
    ttft_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, day_us, user_key, provider, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_hourly_latency (
    project TEXT NOT NULL,
    hour_us INTEGER NOT NULL,
    metric INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    records INTEGER NOT NULL,
    PRIMARY KEY (project, hour_us, metric, bucket)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_daily_latency (
    project TEXT NOT NULL,
    day_us INTEGER NOT NULL,
    metric INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    records INTEGER NOT NULL,
    PRIMARY KEY (project, day_us, metric, bucket)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger_batches (
    batch_id TEXT PRIMARY KEY,
    records INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    revoked_us INTEGER,
    models TEXT NOT NULL DEFAULT '',
    expires_us INTEGER,
    rpm INTEGER,
    tpm INTEGER,
    budget_micros INTEGER,
    budget_period TEXT
);
-- What a key spent (see ledger::keys).
CREATE INDEX IF NOT EXISTS usage_records_by_key
    ON usage_records (api_key_id, time_us) WHERE api_key_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS admin_keys (
    id TEXT PRIMARY KEY,
    name TEXT,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    revoked_us INTEGER
);
CREATE TABLE IF NOT EXISTS stored_responses (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    previous_id TEXT,
    input_items TEXT NOT NULL,
    response TEXT NOT NULL,
    PRIMARY KEY (project, id)
);
