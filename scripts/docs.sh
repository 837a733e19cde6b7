#!/usr/bin/env bash
# The manual (docs/, an mdBook): installs the pinned mdbook once (cached in target/tools, as
# scripts/bench.sh does with oha), builds the book into target/book, and fails on a broken
# link or anchor (scripts/check-links.py reads the built HTML, so anchors are the ids mdbook
# actually wrote). The configuration reference in it is checked by tests/config_cli.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
MDBOOK_VERSION=0.5.4

mdbook="$root/target/tools/mdbook-$MDBOOK_VERSION/bin/mdbook"
if [ ! -x "$mdbook" ]; then
  # No `serve` or `watch`: CI only builds; search stays, the manual's readers want it.
  cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features \
    --features search --root "$root/target/tools/mdbook-$MDBOOK_VERSION"
fi
# mdbook logs a broken {{#include}} as an ERROR and still exits 0: its log decides.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$mdbook" build docs 2>&1 | tee "$log"
if grep -Eq '^ *ERROR' "$log"; then
  echo "docs: mdbook reported errors (above)" >&2
  exit 1
fi
# mdbook renders only the pages SUMMARY.md names: a page left out of it would vanish silently.
orphans=$(cd docs/src && find . -name '*.md' ! -name SUMMARY.md | sed 's|^\./||' |
  while read -r page; do [ -f "$root/target/book/${page%.md}.html" ] || echo "$page"; done)
[ -z "$orphans" ] || { echo "docs: pages not in docs/src/SUMMARY.md:" $orphans >&2; exit 1; }
python3 scripts/check-links.py "$root/target/book" README.md SECURITY.md BENCHMARKS.md
