# clefcheck — see README.md. `make run` runs the main job on the built-in
# demo world; `make test` runs every test.

GO       ?= go
BIN      := bin/clefcheck
DEMO     := demo
BUILD    := build
FULL     := $(BUILD)/full
GOARCH   := $(shell $(GO) env GOARCH)
# The native CLI uses the AVX2 Gram kernel (simd/archsimd) on amd64; it
# checks the CPU at start-up and falls back to portable Go.
ifeq ($(GOARCH),amd64)
SIMD := GOEXPERIMENT=simd
endif

.PHONY: all build wasm serve run demo site space test test-browser test-unit test-simd test-wasm test-full guard vet fuzz bench clean

all: build

build:
	$(SIMD) $(GO) build -o $(BIN) ./cmd/clefcheck

# The browser app: app.wasm (same Go as the server, whose wasm_exec.js go-app
# serves), engine.wasm (the audit's Web Workers) and the static assets, in
# build/web.
wasm:
	mkdir -p $(BUILD)/web
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags=-s -o $(BUILD)/web/app.wasm ./web/app
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags=-s -o $(BUILD)/web/engine.wasm ./web/worker
	@raw=$$(stat -c %s $(BUILD)/web/app.wasm); gz=$$(gzip -9 -c $(BUILD)/web/app.wasm | wc -c); \
	echo "app.wasm $$raw bytes ($$gz gzip; budget $(APP_RAW) and $(APP_GZIP)), engine.wasm $$(stat -c %s $(BUILD)/web/engine.wasm) bytes ($$(gzip -9 -c $(BUILD)/web/engine.wasm | wc -c) gzip)"; \
	if [ $$raw -gt $(APP_RAW) ] || [ $$gz -gt $(APP_GZIP) ]; then echo "app.wasm is over its budget: move work into engine.wasm (wasm/jobs)"; exit 1; fi
	cp -r public/. $(BUILD)/web/

# app.wasm's budget (bytes): the pages only; the engine is in engine.wasm.
APP_RAW = 8000000
APP_GZIP = 2500000

# The main job on the demo world: the site, with the demo world and its
# decision service, on http://127.0.0.1:8080/ (Ctrl-C stops it).
run: build wasm
	$(BIN) serve --addr 127.0.0.1:8080 --web $(BUILD)/web --world $(DEMO)

serve: run

# The same on the command line: audit the demo adapter with the rebuild
# check, then decisiond on loopback and clefcheck decide against it.
demo: build
	scripts/run-demo.sh $(BIN) $(DEMO)

# The static site (make site BASE=/clefcheck for a sub-path, e.g. GitHub Pages).
BASE ?=
site: build wasm
	$(BIN) site --out $(BUILD)/site --base "$(BASE)" --web $(BUILD)/web --world $(DEMO)

# A ready static Hugging Face Space (README front matter sdk: static).
space: build wasm
	$(BIN) site --out $(BUILD)/space --space --web $(BUILD)/web --world $(DEMO)

test: guard vet test-unit test-simd test-wasm test-browser test-full

# Unit, format, fuzz-seed and CLI tests, portable kernel.
test-unit:
	$(GO) test -count=1 ./...

# The same numeric tests with the AVX2 kernel: both must give the same figures.
test-simd:
ifeq ($(GOARCH),amd64)
	GOEXPERIMENT=simd $(GO) test -count=1 ./wasm/spectral ./wasm/audit
endif

# The engine must compile for the browser; the WebAssembly SIMD kernels of
# the audit workers run in Node (V8, as in Chromium) against the portable loops.
test-wasm:
	GOOS=js GOARCH=wasm $(GO) build ./wasm/...
	GOOS=js GOARCH=wasm $(GO) test -count=1 -exec "node $(CURDIR)/scripts/wasm-node.js" ./wasm/browser/...

# Real-browser tests (Debian's chromium, chromedp): the served site audits
# the demo world, a tampered adapter given as files, and runs decisions.
test-browser: wasm
	CLEFCHECK_WEB=$(CURDIR)/$(BUILD)/web CLEFCHECK_SHOTS=$(CURDIR)/scripts/out/screenshots \
		$(GO) test -count=1 -tags browser -run Browser -v ./cmd/clefcheck

# Browser timings on the 1.40 GB twin (not part of make test).
bench-browser: wasm build
	[ -f $(FULL)/adapter/extraction-report.json ] || $(BIN) world --full $(FULL)
	CLEFCHECK_FULL=$(CURDIR)/$(FULL) CLEFCHECK_BIN=$(CURDIR)/$(BIN) CLEFCHECK_WEB=$(CURDIR)/$(BUILD)/web CLEFCHECK_SHOTS=$(CURDIR)/scripts/out/screenshots \
		$(GO) test -count=1 -timeout 40m -tags browser -run FullTwinTimings -v ./cmd/clefcheck

# The full-size twin of kvit-s/clef-lora-r256 (1.40 GB): the claims pass,
# tampered copies fail with the right codes.
test-full: build
	scripts/full-twin-test.sh $(BIN) $(FULL)

# Architecture guards (scripts/guard.sh): the engine (wasm/) never imports
# syscall/js or go-app outside wasm/browser; app.wasm links only an
# allow-list (the pages, the jobs contract, the page's engine client); the
# CLI goes through wasm/jobs and wasm/runner; no Go file over 600 lines.
guard:
	GO=$(GO) scripts/guard.sh

vet:
	@fmt=$$(gofmt -l cmd wasm web scripts 2>/dev/null); if [ -n "$$fmt" ]; then echo "gofmt needed: $$fmt"; exit 1; fi
	$(GO) vet ./...
	GOOS=js GOARCH=wasm $(GO) vet ./...

# Longer fuzzing of the parsers (not part of make test).
fuzz:
	$(GO) test ./wasm/safetensors -run XXX -fuzz FuzzHeader -fuzztime 60s
	$(GO) test ./wasm/safetensors -run XXX -fuzz FuzzIndex -fuzztime 30s

# Benchmarks: quick and deep audit of the full twin beside a raw read.
bench: build
	scripts/bench.sh $(BIN) $(FULL)
	$(SIMD) $(GO) test -run XXX -bench . -benchtime 3x ./wasm/spectral

clean:
	rm -rf bin $(BUILD) $(DEMO)
