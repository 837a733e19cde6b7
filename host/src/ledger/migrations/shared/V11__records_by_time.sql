-- V11: the records by time alone (issue 37). The alert rules read every provider's records of
-- the last few minutes (error rate, latency); the other indexes lead with the project, so
-- without this one each look would read the whole table.
CREATE INDEX IF NOT EXISTS usage_records_by_time ON usage_records (time_us);
