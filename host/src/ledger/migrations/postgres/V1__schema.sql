-- V1: the ledger's schema as wasmgate created it before versioned migrations (2026-11).
-- A database made before then has no history table: it is brought to this schema by the
-- column checks of ledger::postgres::legacy and recorded as V1 without running this file.
CREATE TABLE IF NOT EXISTS usage_records (
    request_id TEXT NOT NULL,
    time_us BIGINT NOT NULL,
    project TEXT NOT NULL,
    api_key_id TEXT,
    user_key BIGINT NOT NULL,
    user_id TEXT,
    user_name TEXT,
    user_tags TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    operation TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cached_input_tokens BIGINT NOT NULL,
    cost_micros BIGINT,
    latency_us BIGINT NOT NULL,
    status INTEGER NOT NULL,
    error_type TEXT,
    estimated BOOLEAN NOT NULL,
    ttft_us BIGINT,
    reasoning_tokens BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0
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
    user_key BIGSERIAL PRIMARY KEY,
    project TEXT NOT NULL,
    user_id TEXT NOT NULL,
    user_name TEXT NOT NULL,
    user_tags TEXT NOT NULL,
    UNIQUE (project, user_id, user_name, user_tags)
);
CREATE TABLE IF NOT EXISTS usage_hourly_models (
    project TEXT NOT NULL,
    hour_us BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    latency_us BIGINT NOT NULL DEFAULT 0,
    ttft_us BIGINT NOT NULL DEFAULT 0,
    ttft_count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, hour_us, provider, model)
);
CREATE TABLE IF NOT EXISTS usage_daily_models (
    project TEXT NOT NULL,
    day_us BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    latency_us BIGINT NOT NULL DEFAULT 0,
    ttft_us BIGINT NOT NULL DEFAULT 0,
    ttft_count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, day_us, provider, model)
);
CREATE TABLE IF NOT EXISTS usage_hourly_users (
    project TEXT NOT NULL,
    user_key BIGINT NOT NULL,
    hour_us BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    latency_us BIGINT NOT NULL DEFAULT 0,
    ttft_us BIGINT NOT NULL DEFAULT 0,
    ttft_count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, hour_us, user_key, provider, model)
);
CREATE TABLE IF NOT EXISTS usage_daily_users (
    project TEXT NOT NULL,
    user_key BIGINT NOT NULL,
    day_us BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    latency_us BIGINT NOT NULL DEFAULT 0,
    ttft_us BIGINT NOT NULL DEFAULT 0,
    ttft_count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, day_us, user_key, provider, model)
);
CREATE TABLE IF NOT EXISTS usage_hourly_latency (
    project TEXT NOT NULL,
    hour_us BIGINT NOT NULL,
    metric INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    records BIGINT NOT NULL,
    PRIMARY KEY (project, hour_us, metric, bucket)
);
CREATE TABLE IF NOT EXISTS usage_daily_latency (
    project TEXT NOT NULL,
    day_us BIGINT NOT NULL,
    metric INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    records BIGINT NOT NULL,
    PRIMARY KEY (project, day_us, metric, bucket)
);
CREATE TABLE IF NOT EXISTS ledger_batches (
    batch_id TEXT PRIMARY KEY,
    records INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_us BIGINT NOT NULL,
    revoked_us BIGINT,
    models TEXT NOT NULL DEFAULT '',
    expires_us BIGINT,
    rpm BIGINT,
    tpm BIGINT,
    budget_micros BIGINT,
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
    created_us BIGINT NOT NULL,
    revoked_us BIGINT
);
CREATE TABLE IF NOT EXISTS stored_responses (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    created_us BIGINT NOT NULL,
    previous_id TEXT,
    input_items TEXT NOT NULL,
    response TEXT NOT NULL,
    PRIMARY KEY (project, id)
);
