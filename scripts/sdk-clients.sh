#!/usr/bin/env bash
# Installs the official API clients that tests/sdk/ drives (tests/sdk_clients.rs) into
# target/sdk-clients/, pinned, once (skipped when the pinned versions are there): the Python
# `anthropic`, `openai`, `google-genai` and `mcp` packages in a virtual environment, and the Node
# `@anthropic-ai/sdk`, `openai`, `@google/genai`, `@modelcontextprotocol/sdk`, Claude Code
# (`@anthropic-ai/claude-code`, whose `claude` lands in target/sdk-clients/js/node_modules/.bin)
# and Codex (`@openai/codex`, whose `codex` lands there too).
# Needs python3 (3.9+, with venv), node (20+) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

ANTHROPIC_PY=2.12.0
OPENAI_PY=3.54.0
GOOGLE_GENAI_PY=3.6.1
ANTHROPIC_JS=1.12.0
GOOGLE_GENAI_JS=3.3.0
OPENAI_JS=7.57.0
MCP_PY=2.3.0
MCP_JS=1.32.2
CLAUDE_CODE=2.1.332
CODEX=0.171.0

tools=$PWD/target/sdk-clients
py=$tools/py
js=$tools/js
mkdir -p "$tools"

for tool in python3 node npm; do
  command -v "$tool" >/dev/null || { echo "scripts/sdk-clients.sh: $tool is needed" >&2; exit 1; }
done
pip_version() { "$py/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null; }
if [ "$(pip_version anthropic)" != "$ANTHROPIC_PY" ] || [ "$(pip_version openai)" != "$OPENAI_PY" ] \
   || [ "$(pip_version google-genai)" != "$GOOGLE_GENAI_PY" ] || [ "$(pip_version mcp)" != "$MCP_PY" ]; then
  rm -rf "$py"
  python3 -m venv "$py"
  "$py/bin/pip" install -q "anthropic==$ANTHROPIC_PY" "openai==$OPENAI_PY" "google-genai==$GOOGLE_GENAI_PY" \
    "mcp==$MCP_PY"
fi
installed() { node -p "require('$js/node_modules/$1/package.json').version" 2>/dev/null; }
if [ "$(installed @anthropic-ai/sdk)" != "$ANTHROPIC_JS" ] || [ "$(installed openai)" != "$OPENAI_JS" ]; then
  mkdir -p "$js"
  [ -f "$js/package.json" ] || echo '{"name":"wasmgate-sdk-clients","private":true}' > "$js/package.json"
  (cd "$js" && npm install --silent --no-audit --no-fund "@anthropic-ai/sdk@$ANTHROPIC_JS" "openai@$OPENAI_JS")
fi
if [ "$(installed @google/genai)" != "$GOOGLE_GENAI_JS" ]; then
  mkdir -p "$js"
  [ -f "$js/package.json" ] || echo '{"name":"wasmgate-sdk-clients","private":true}' > "$js/package.json"
  (cd "$js" && npm install --silent --no-audit --no-fund "@google/genai@$GOOGLE_GENAI_JS")
fi
if [ "$(installed @modelcontextprotocol/sdk)" != "$MCP_JS" ] \
   || [ "$(installed @anthropic-ai/claude-code)" != "$CLAUDE_CODE" ]; then
  mkdir -p "$js"
  [ -f "$js/package.json" ] || echo '{"name":"wasmgate-sdk-clients","private":true}' > "$js/package.json"
  (cd "$js" && npm install --silent --no-audit --no-fund "@modelcontextprotocol/sdk@$MCP_JS" \
    "@anthropic-ai/claude-code@$CLAUDE_CODE")
fi
if [ "$(installed @openai/codex)" != "$CODEX" ]; then
  mkdir -p "$js"
  [ -f "$js/package.json" ] || echo '{"name":"wasmgate-sdk-clients","private":true}' > "$js/package.json"
  (cd "$js" && npm install --silent --no-audit --no-fund "@openai/codex@$CODEX")
fi
