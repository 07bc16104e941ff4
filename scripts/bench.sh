#!/usr/bin/env bash
# Benchmarks the native audit on the full-size twin of kvit-s/clef-lora-r256
# beside its floors (a raw read of the same file, cat; the SHA-256 of the
# files the audit reads) and its peer (the numpy script scripts/peer.py
# doing the same work on the same file, with and without the digests), in
# the same run: RUNS rounds (default 5), each running every command once in
# turn, so that the figures alternate and share the machine's noise. Prints
# each figure's median, min and max wall time and its peak RSS, the ratios
# of the medians, the load average before and after, and the CPU flags.
# The file is read once first: every figure is with a warm page cache.
# Usage: bench.sh BIN DIR   (RUNS=n for more rounds; PYTHON for the peer's
# interpreter, default Debian's /usr/bin/python3 with python3-numpy and,
# for a fair peer, an optimized BLAS: libopenblas0-pthread)
set -euo pipefail
bin=$1
dir=$2
runs=${RUNS:-5}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=python3
[ -f "$dir/adapter/extraction-report.json" ] || "$bin" world --full "$dir" >/dev/null
f=$dir/adapter/adapter_model.safetensors
ad=$dir/adapter
cat "$f" > /dev/null
peer=1
if ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "no numpy for $py (apt-get install python3-numpy): the peer is left out"
  peer=0
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(go version | cut -d' ' -f3)"
echo "cpu flags (SIMD): $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(sse4_2|avx|avx2|fma|f16c|avx512[a-z0-9_]*|amx[a-z0-9_]*)$' | tr '\n' ' ')"
kernel() { "$bin" audit "--$1" --json --no-digest --no-progress --claims clef-lora-r256 "$ad" 2>/dev/null | "$py" -c 'import json,sys; print(json.load(sys.stdin)["summary"].get("kernel", "?"))' 2>/dev/null || echo "?"; }
echo "kernels: quick: $(kernel quick); exact: $(kernel exact); randomized: $(kernel randomized)"
if [ "$peer" = 1 ]; then
  blas=$(readlink -f /etc/alternatives/libblas.so.3-x86_64-linux-gnu 2>/dev/null || echo '?')
  echo "peer: numpy $("$py" -c 'import numpy; print(numpy.__version__)'), BLAS $blas"
  case $blas in
  *openblas* | *blis* | *mkl*) ;;
  *) echo "warning: the peer's BLAS is not an optimized one (Debian's reference BLAS is ~10x slower than OpenBLAS): apt-get install libopenblas0-pthread for a fair peer" ;;
  esac
fi
echo "file: $f ($(stat -c %s "$f") bytes); $runs alternating rounds"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# The floors: a raw read (cat), and the SHA-256 of the files the audit
# reads (hashlib, i.e. OpenSSL with SHA-NI where the CPU has it), which no
# audit that checks the digests can beat: one SHA-256 stream cannot be
# split. The peer runs with and without those digests, so that each of
# clefcheck's figures has a like-for-like one.
labels=("raw read (cat)" "sha256 of the files" "quick" "quick, no digests" "exact" "exact, no digests" "randomized")
cmds=(
  "cat $f"
  "$py $here/peer.py sha256 $ad"
  "$bin audit --quick --no-progress --claims clef-lora-r256 $ad"
  "$bin audit --quick --no-digest --no-progress --claims clef-lora-r256 $ad"
  "$bin audit --exact --no-progress --claims clef-lora-r256 $ad"
  "$bin audit --exact --no-digest --no-progress --claims clef-lora-r256 $ad"
  "$bin audit --randomized --no-progress --claims clef-lora-r256 $ad"
)
if [ "$peer" = 1 ]; then
  labels+=("numpy peer, quick" "numpy peer, exact" "numpy, quick + sha256" "numpy, exact + sha256")
  cmds+=("$py $here/peer.py quick $ad" "$py $here/peer.py exact $ad" "$py $here/peer.py quick --sha256 $ad" "$py $here/peer.py exact --sha256 $ad")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((k = 0; k < runs; k++)); do
  for i in "${!cmds[@]}"; do
    # shellcheck disable=SC2086
    /usr/bin/time -o "$tmp/t" -f "%e %M %U %S" ${cmds[$i]} >/dev/null 2>"$tmp/err" || { echo "failed: ${cmds[$i]}"; cat "$tmp/err"; }
    tail -1 "$tmp/t" >> "$tmp/$i"
  done
done
median() { sort -n | awk '{v[NR]=$1} END {printf "%.3f", (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
stat() { # file → "median min max maxrss median-cpu"
  local md mn mx rss cpu
  md=$(awk '{print $1}' "$1" | median)
  mn=$(awk '{print $1}' "$1" | sort -n | head -1)
  mx=$(awk '{print $1}' "$1" | sort -n | tail -1)
  rss=$(awk '{print $2}' "$1" | sort -n | tail -1)
  cpu=$(awk '{print $3 + $4}' "$1" | median)
  echo "$md $mn $mx $rss $cpu"
}
# Wall time is what the issue's figures are; on a shared machine the CPU
# time (user + sys, median) is the steadier measure of the work done.
printf "%-22s %8s %8s %8s %12s %10s\n" "" "median s" "min s" "max s" "peak RSS kB" "CPU s"
declare -A med mins
for i in "${!cmds[@]}"; do
  read -r md mn mx rss cpu <<< "$(stat "$tmp/$i")"
  med[$i]=$md
  mins[$i]=$mn
  printf "%-22s %8s %8s %8s %12s %10s\n" "${labels[$i]}" "$md" "$mn" "$mx" "$rss" "$cpu"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
echo "ratios (of the medians; of the minimums, the least disturbed runs):"
r2() { echo "$(ratio "${med[$1]}" "${med[$2]}") ($(ratio "${mins[$1]}" "${mins[$2]}"))"; }
echo "  quick / raw read:                    $(r2 2 0)   target ≤ 2"
echo "  quick / sha256 of the files:         $(r2 2 1)   (the floor of a read that checks digests)"
echo "  quick, no digests / raw read:        $(r2 3 0)   target ≤ 2"
echo "  randomized / exact:                  $(r2 6 4)   target ≤ 1"
if [ "$peer" = 1 ]; then
  echo "  like for like, the peer doing the same work:"
  echo "  quick / numpy quick + sha256:        $(r2 2 9)"
  echo "  quick, no digests / numpy quick:     $(r2 3 7)"
  echo "  exact / numpy exact + sha256:        $(r2 4 10)   target ≤ 0.33"
  echo "  exact, no digests / numpy exact:     $(r2 5 8)   target ≤ 0.33"
  echo "  the issue's pairing (clefcheck hashing, the peer not):"
  echo "  exact / numpy exact:                 $(r2 4 8)"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
