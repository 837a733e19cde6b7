#!/usr/bin/env bash
# Installs the pinned browser-automation client for tests/console.rs (playwright-core, driving
# Debian's headless Chromium at /usr/bin/chromium) into target/console-browser/, once.
# Needs node (20+) and npm; no browser is downloaded (playwright-core ships none).
set -euo pipefail
cd "$(dirname "$0")/.."

PLAYWRIGHT_CORE=1.65.1

dir=$PWD/target/console-browser
installed() { node -p "require('$dir/node_modules/$1/package.json').version" 2>/dev/null; }
if [ "$(installed playwright-core)" != "$PLAYWRIGHT_CORE" ]; then
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"wasmgate-console-tests","private":true}' > "$dir/package.json"
  (cd "$dir" && npm install --silent --no-audit --no-fund "playwright-core@$PLAYWRIGHT_CORE")
fi
