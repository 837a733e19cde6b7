-- V3: the response cache. A hit is a record of its own: no upstream call, cost 0, and the cost
-- the kept answer had when it was made (its saving). Hits and savings are summed in the rollups.
ALTER TABLE usage_records ADD COLUMN cache_hit BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE usage_records ADD COLUMN saved_cost_micros BIGINT;
ALTER TABLE usage_hourly_models ADD COLUMN cache_hits BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_models ADD COLUMN saved_cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN cache_hits BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN saved_cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN cache_hits BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN saved_cost_micros BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN cache_hits BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN saved_cost_micros BIGINT NOT NULL DEFAULT 0;
