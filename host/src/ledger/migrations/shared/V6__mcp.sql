-- V6: the MCP gateway. A tool call is a usage record of its own (operation `mcp.tools.call`,
-- provider = the server, model = the tool, no tokens) with the bytes of its arguments and of its
-- result; a key may be narrowed to some servers and tools (`<server>/<tool>` patterns, one a
-- line; empty allows every tool).
ALTER TABLE usage_records ADD COLUMN bytes_in BIGINT;
ALTER TABLE usage_records ADD COLUMN bytes_out BIGINT;
ALTER TABLE api_keys ADD COLUMN tools TEXT NOT NULL DEFAULT '';
