-- The guards' verdicts on a request (guard, side, action, counts by kind; never the matched
-- text), as a JSON array; NULL when no guard applied.
ALTER TABLE usage_records ADD COLUMN guards TEXT;
