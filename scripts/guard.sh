#!/usr/bin/env bash
# Architecture guards (make guard), as esbuild's Makefile does for its layers:
#  1. the engine (wasm/) never imports syscall/js or go-app outside its
#     browser glue, wasm/browser;
#  2. app.wasm (./web/app) links only the pages, the contract (jobs, report,
#     progress), the page's engine client (wasm/browser, its message protocol wasm/browser/msg, and the range
#     readers it uses, source and fetch) and go-app: an allow-list, so a new
#     computing package cannot slip in;
#  3. the CLI's non-test code imports, from the engine, only the door
#     (jobs, runner), the contract (report, progress), the servers
#     (service) and the world generator (world), and web for serve.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
mod=$($go list -m)
fail=0

bad=$(grep -rlE '"syscall/js"|maxence-charriere/go-app' wasm --include='*.go' | grep -v '^wasm/browser/' || true)
if [ -n "$bad" ]; then echo "guard: the engine imports browser code outside wasm/browser: $bad"; fail=1; fi

app_allowed="web web/app wasm/jobs wasm/report wasm/progress wasm/browser wasm/browser/msg wasm/source wasm/fetch"
for p in $(GOOS=js GOARCH=wasm $go list -deps ./web/app | grep -E "^$mod/|gonum" || true); do
  rel=${p#"$mod/"}
  case " $app_allowed " in *" $rel "*) ;; *) echo "guard: app.wasm links $p (the pages hold no engine code: it belongs in engine.wasm, behind wasm/jobs)"; fail=1;; esac
done

cli_allowed="wasm/jobs wasm/runner wasm/report wasm/progress wasm/service wasm/world web"
for p in $($go list -f '{{join .Imports "\n"}}' ./cmd/clefcheck | grep "^$mod/" || true); do
  rel=${p#"$mod/"}
  case " $cli_allowed " in *" $rel "*) ;; *) echo "guard: the CLI imports $p (it goes through wasm/jobs and wasm/runner)"; fail=1;; esac
done

big=$(find cmd wasm web scripts -name '*.go' ! -name '*_test.go' -exec wc -l {} + | awk '$2 != "total" && $1 > 600 {print $2" ("$1" lines)"}')
if [ -n "$big" ]; then echo "guard: Go files over 600 lines (split them by phase or role): $big"; fail=1; fi

[ $fail = 0 ] && echo "guard: engine free of browser code outside wasm/browser; app.wasm links only $app_allowed; the CLI imports only $cli_allowed; no Go file over 600 lines"
exit $fail
