-- V8: OpenAI's Files and Batch APIs through the gateway (issue 24), and the units metered since
-- the audio and rerank endpoints landed.
--
-- A batch's lines are metered as records of their own, `batch_id` naming the gateway's batch;
-- the rollups sum them apart too, so that `/usage/total` and the console show batch spend.
ALTER TABLE usage_records ADD COLUMN batch_id TEXT;
ALTER TABLE usage_records ADD COLUMN audio_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN characters BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN search_units BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_models ADD COLUMN batch_requests BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_models ADD COLUMN batch_cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN batch_requests BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN batch_cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN batch_requests BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN batch_cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN batch_requests BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN batch_cost_micros BIGINT NOT NULL DEFAULT 0;
-- The gateway's file ids, each its project's, mapped to the provider entry and the upstream's
-- id. A batch input file also keeps what its lines were checked to (model, count, estimate).
CREATE TABLE gateway_files (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    provider TEXT NOT NULL,
    upstream_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    filename TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    created_us BIGINT NOT NULL,
    model TEXT,
    lines BIGINT NOT NULL DEFAULT 0,
    estimate_micros BIGINT,
    estimate_tokens BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, id)
);
CREATE INDEX gateway_files_by_upstream ON gateway_files (provider, upstream_id);
-- The gateway's batch ids, likewise, with the batch object as last seen (ids the gateway's) and
-- its metering: `claim_until_us` is the lease of the replica metering it (taken by a
-- conditional UPDATE), `metered_us` when every output line was recorded.
CREATE TABLE gateway_batches (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    provider TEXT NOT NULL,
    upstream_id TEXT NOT NULL,
    api_key_id TEXT,
    model TEXT NOT NULL,
    input_file_id TEXT NOT NULL,
    created_us BIGINT NOT NULL,
    status TEXT NOT NULL,
    object TEXT NOT NULL,
    claim_until_us BIGINT,
    metered_us BIGINT,
    metered_lines BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, id)
);
CREATE INDEX gateway_batches_unmetered ON gateway_batches (metered_us, created_us);
