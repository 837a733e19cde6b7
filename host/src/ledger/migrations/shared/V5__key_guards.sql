-- The guards a key names (config `guards:` entries by name, one a line), applied to its
-- requests besides those whose scope takes them; '' for none.
ALTER TABLE api_keys ADD COLUMN guards TEXT NOT NULL DEFAULT '';
