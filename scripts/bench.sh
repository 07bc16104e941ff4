#!/usr/bin/env bash
# Benchmarks the audit on the full-size twin of kvit-s/clef-lora-r256 beside
# a raw read of the same file, in the same run: wall time and peak RSS.
# The file is read once first, so every figure is with a warm page cache.
# Usage: bench.sh BIN DIR
set -euo pipefail
bin=$1
dir=$2
[ -f "$dir/adapter/extraction-report.json" ] || "$bin" world --full "$dir" >/dev/null
f=$dir/adapter/adapter_model.safetensors
cat "$f" > /dev/null
measure() { # label, command...
  local label=$1; shift
  local out
  if [ -x /usr/bin/time ]; then
    local tf; tf=$(mktemp)
    /usr/bin/time -o "$tf" -f "%e %M" "$@" >/dev/null 2>&1 || true
    out=$(tail -1 "$tf"); rm -f "$tf"
    printf "%-36s %7.2f s   peak RSS %6d kB\n" "$label" ${out% *} ${out#* }
  else
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
    printf "%-36s %7.2f s\n" "$label" "$(echo "$t1 - $t0" | bc -l)"
  fi
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(go version | cut -d' ' -f3)"
echo "file: $f ($(stat -c %s "$f") bytes)"
measure "raw read (cat)" cat "$f"
measure "quick audit" "$bin" audit --quick --no-progress --claims clef-lora-r256 "$dir/adapter"
measure "deep audit (kernel from the build)" "$bin" audit --no-progress --claims clef-lora-r256 "$dir/adapter"
measure "deep audit, 1 worker" "$bin" audit --no-progress --workers 1 --claims clef-lora-r256 "$dir/adapter"
