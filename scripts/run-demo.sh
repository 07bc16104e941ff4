#!/usr/bin/env bash
# The main job on the built-in demo world (make run): audit the demo adapter
# against its claims with the rebuild check, then serve the demo decision
# service on loopback and send the test records to it, comparing answers and
# hidden states with the references. Usage: run-demo.sh BIN WORLD
set -euo pipefail
bin=$1
world=$2
[ -f "$world/reference/answers/arc-mini.jsonl" ] || "$bin" world "$world"
echo "== audit: the demo adapter against its claims, with the rebuild check"
"$bin" audit --claims demo --base "$world/base" --tuned "$world/tuned" "$world/adapter" || true
port=${CLEFCHECK_DEMO_PORT:-18090}
echo
echo "== decisions: clefcheck decisiond on 127.0.0.1:$port, clefcheck decide against it"
"$bin" decisiond --world "$world" --addr "127.0.0.1:$port" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
"$bin" decide --server "http://127.0.0.1:$port" --hidden \
  --records "$world/records/arc-mini.jsonl" --records "$world/records/intents-mini.jsonl" \
  --reference "$world/reference" --out "$world/run"
