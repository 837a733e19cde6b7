#!/usr/bin/env bash
# Builds and unit-tests the Python and JavaScript plugins (the SDKs' examples and the test-only
# fault plugins) with pinned toolchains, for tests/polyglot.rs. The toolchains are installed once
# into target/polyglot/ (pip and npm; skipped when present); the components land in
# target/polyglot/plugins/. Needs python3 (3.11+, with venv), node (20+) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

COMPONENTIZE_PY=0.25.1
COMPONENTIZE_JS=0.23.0
ROLLDOWN=1.3.2

tools=$PWD/target/polyglot
py=$tools/py/venv
js=$tools/js
out=$tools/plugins
mkdir -p "$tools" "$out"

for tool in python3 node npm; do
  command -v "$tool" >/dev/null || { echo "scripts/polyglot.sh: $tool is needed" >&2; exit 1; }
done
if [ "$("$py/bin/componentize-py" --version 2>/dev/null)" != "componentize-py $COMPONENTIZE_PY" ]; then
  rm -rf "$py"
  python3 -m venv "$py"
  "$py/bin/pip" install -q "componentize-py==$COMPONENTIZE_PY"
fi
installed() { node -p "require('$js/node_modules/$1/package.json').version" 2>/dev/null; }
if [ "$(installed @bytecodealliance/componentize-js)" != "$COMPONENTIZE_JS" ] || [ "$(installed rolldown)" != "$ROLLDOWN" ]; then
  mkdir -p "$js"
  [ -f "$js/package.json" ] || echo '{"name":"wasmgate-js-toolchain","private":true}' > "$js/package.json"
  (cd "$js" && npm install --silent --no-audit --no-fund \
    "@bytecodealliance/componentize-js@$COMPONENTIZE_JS" "rolldown@$ROLLDOWN")
fi

# The gateway binary as the tests build it: `cargo build --bin wasmgate` unifies dependencies'
# features without the dev-dependencies, so it built wasmtime and cranelift a second time, with
# other features, before `cargo test --workspace` built them again for the tests (CI minutes).
# This builds the tests too, which scripts/test.sh runs next without building anything.
cargo test --workspace --no-run --quiet
wasmgate=$PWD/target/debug/wasmgate
export WASMGATE_PYTHON_TOOLCHAIN=$py WASMGATE_JS_TOOLCHAIN=$js
for project in examples/plugins/* tests/polyglot/*; do
  [ -f "$project/wasmgate-plugin.yaml" ] || continue
  case "$project" in tests/*) ;; *) "$wasmgate" plugin test "$project" ;; esac
  "$wasmgate" plugin build "$project" --out "$out"
done
