#!/usr/bin/env bash
# End-to-end test on the full-size twin of kvit-s/clef-lora-r256 (1.40 GB):
# the card's claims pass (quick and deep audit); tampered copies fail with
# the right codes; the exact audit gives the same figures with the AVX2 Gram
# kernel as with the one the CPU picks. Usage: full-twin-test.sh BIN DIR
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

# The exact audit's figures with the Gram kernel the CPU picks and with the
# AVX2 one (GODEBUG=cpu.avx512f=off hides AVX-512 from the start-up checks,
# as on an AVX2-only machine): the same verdict, and every figure of every
# pair within 10⁻⁵ relative (a Gram entry agrees within 10⁻⁶·√(Gᵢᵢ·Gⱼⱼ)
# between kernels, CheckGramKernel; σ, norms and the form bounds derive
# from them) or 10⁻⁹ absolute.
"$bin" audit --exact --no-digest --json --no-progress --claims clef-lora-r256 "$ad" >"$dir/kernel-own.json" || true
GODEBUG=cpu.avx512f=off "$bin" audit --exact --no-digest --json --no-progress --claims clef-lora-r256 "$ad" >"$dir/kernel-avx2.json" || true
if ! python3 - "$dir/kernel-own.json" "$dir/kernel-avx2.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
ka, kb = a["summary"]["kernel"], b["summary"]["kernel"]
bad = []
if a["verdict"] != b["verdict"] or a["verdict"] != "pass":
    bad.append(f"verdicts {a['verdict']} ({ka}) and {b['verdict']} ({kb})")
n = 0
def same(x, y, where):
    global n
    if isinstance(x, dict):
        for k in x:
            same(x[k], y.get(k), where + "." + k)
    elif isinstance(x, list):
        if not isinstance(y, list) or len(x) != len(y):
            bad.append(where + ": lengths differ")
            return
        for i, (u, v) in enumerate(zip(x, y)):
            same(u, v, f"{where}[{i}]")
    elif isinstance(x, float) or isinstance(y, float):
        n += 1
        if not isinstance(y, (int, float)) or abs(x - y) > 1e-5 * max(abs(x), abs(y)) + 1e-9:
            bad.append(f"{where}: {x} ({ka}), {y} ({kb})")
    elif x != y:
        bad.append(f"{where}: {x!r} ({ka}), {y!r} ({kb})")
if len(a["matrices"]) != 186 or len(b["matrices"]) != 186:
    bad.append("not 186 pairs")
for u, v in zip(a["matrices"], b["matrices"]):
    same(u, v, u["module"])
for x in bad[:10]:
    print("  " + x)
print(f"kernels {ka} and {kb}: {n} figures of {len(a['matrices'])} pairs compared, {len(bad)} differ")
sys.exit(1 if bad else 0)
PY
then
  echo "FAIL: the exact audit's figures depend on the Gram kernel"; fails=$((fails+1))
else
  echo "ok: the exact audit's figures agree between Gram kernels"
fi
rm -f "$dir/kernel-own.json" "$dir/kernel-avx2.json"

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
