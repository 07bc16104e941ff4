#!/usr/bin/env bash
# End-to-end test on the full-size twin of kvit-s/clef-lora-r256 (1.40 GB):
# the card's claims pass (quick and deep audit); tampered copies fail with
# the right codes. Usage: full-twin-test.sh BIN DIR
set -euo pipefail
bin=$1
dir=$2
if [ ! -f "$dir/adapter/extraction-report.json" ]; then
  "$bin" world --full "$dir"
fi
ad=$dir/adapter
fails=0
expect() { # expect EXIT CODE... -- ARGS
  local want=$1; shift
  local codes=()
  while [ "$1" != "--" ]; do codes+=("$1"); shift; done
  shift
  local out rc=0
  out=$("$bin" audit --json --no-progress "$@") || rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL: audit $* exited $rc, want $want"; fails=$((fails+1)); return
  fi
  for c in "${codes[@]}"; do
    if ! grep -q "\"code\": \"$c\"" <<<"$out"; then
      echo "FAIL: audit $* has no finding $c"; fails=$((fails+1)); return
    fi
  done
  echo "ok: audit $* → exit $rc ${codes[*]}"
}
expect 0 -- --quick --claims clef-lora-r256 "$ad"
expect 0 -- --claims clef-lora-r256 "$ad"
expect 0 -- --randomized --claims clef-lora-r256 "$ad"

tmp=$(mktemp -d "$dir/tampered.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The demo's claims do not fit the real adapter.
expect 1 config.mismatch shape.mismatch params.mismatch -- --quick --claims demo "$ad"
# A report whose σ₁ of one pair is 10 % off.
python3 - "$ad/extraction-report.json" "$tmp/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["matrices"][7]["singular_values"][0] *= 1.1
json.dump(r, open(sys.argv[2], "w"))
PY
expect 1 report.mismatch -- --claims clef-lora-r256 --report "$tmp/report.json" "$ad"
expect 1 report.mismatch -- --randomized --claims clef-lora-r256 --report "$tmp/report.json" "$ad"
# NaN written into a copy of the adapter, and a trailing byte.
mkdir "$tmp/nan"
cp "$ad/adapter_config.json" "$tmp/nan/"
cp "$ad/adapter_model.safetensors" "$tmp/nan/"
printf '\xc0\x7f' | dd of="$tmp/nan/adapter_model.safetensors" bs=1 seek=700000000 conv=notrunc status=none
expect 1 values.nonfinite -- --quick --claims clef-lora-r256 "$tmp/nan"
printf 'x' >> "$tmp/nan/adapter_model.safetensors"
expect 1 data.layout -- --quick --claims clef-lora-r256 "$tmp/nan"
if [ "$fails" -gt 0 ]; then
  echo "full-twin test: $fails failed"; exit 1
fi
echo "full-twin test: all passed"
