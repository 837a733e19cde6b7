#!/usr/bin/env bash
# Makes a release binary what the image and release artefacts ship (issue 34):
# - its DWARF (line tables of the host's own code) moved into <binary>.debug, zlib-compressed,
#   and the binary given a `.gnu_debuglink` to it, so a debugger or a backtrace finds file and
#   line again when the .debug file is put beside the binary;
# - its symbol table cut to the host's own symbols (`wasmgate::…`, and generic code instantiated
#   with its types), so that a backtrace from the shipped binary alone still names our frames,
#   and std's two markers that a short backtrace (RUST_BACKTRACE=1) is cut between (without
#   them it prints no frame at all); dependencies' frames are unnamed without the .debug file.
# Prints the sizes before and after, and fails when the shipped binary is over SHIP_MAX_MB
# (default 60): the check costs no build of its own, it runs where the release build already is.
#   scripts/ship-binary.sh target/production/wasmgate
set -euo pipefail
bin=${1:?usage: scripts/ship-binary.sh <release binary>}
max_mb=${SHIP_MAX_MB:-60}
command -v objcopy >/dev/null || { echo "ship-binary.sh: objcopy (binutils) is needed" >&2; exit 1; }
before=$(stat -c %s "$bin")
objcopy --only-keep-debug --compress-debug-sections=zlib "$bin" "$bin.debug"
objcopy --wildcard --strip-all --keep-symbol='*wasmgate*' \
  --keep-symbol='*__rust_begin_short_backtrace*' --keep-symbol='*__rust_end_short_backtrace*' \
  --add-gnu-debuglink="$bin.debug" "$bin" "$bin.shipped"
mv "$bin.shipped" "$bin"
after=$(stat -c %s "$bin")
ours=$(nm "$bin" | grep -c wasmgate || true)
echo "ship-binary.sh: $bin $before -> $after bytes ($ours symbols of ours kept); $bin.debug $(stat -c %s "$bin.debug") bytes"
if [ "$ours" -lt 1000 ]; then
  echo "ship-binary.sh: only $ours wasmgate symbols left: backtraces would not name our frames" >&2
  exit 1
fi
if [ "$after" -gt $((max_mb * 1000 * 1000)) ]; then
  echo "ship-binary.sh: $bin is $after bytes, over ${max_mb} MB" >&2
  exit 1
fi
