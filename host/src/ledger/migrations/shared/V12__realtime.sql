-- V12: the Realtime API through the gateway (issue 36): each response of a session is a record
-- of its own, `session_id` (the gateway's `rtsess_…`) tying a session's records together.
ALTER TABLE usage_records ADD COLUMN session_id TEXT;
