-- The pass-through routes a key may reach, as `<entry>/<path>` patterns joined by newlines;
-- empty leaves the key to the config's `passthrough.allow`.
ALTER TABLE api_keys ADD COLUMN passthrough TEXT NOT NULL DEFAULT '';
