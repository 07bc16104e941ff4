// Runs a GOOS=js GOARCH=wasm test binary in Node like Go's own
// go_js_wasm_exec, and also exposes the instance's memory as clefcheckMem,
// as public/worker.js does in the browser, so that the WebAssembly SIMD
// kernels (wasm/wasmsimd, installed by wasm/browser/worker/simd.go) can be
// tested here.
// Usage: GOOS=js GOARCH=wasm go test -exec "node $PWD/scripts/wasm-node.js" ./wasm/browser/...
"use strict";
const path = require("path");
const { execSync } = require("child_process");

// Relaxed SIMD (wasmsimd.ModuleFMA) is on by default in Chromium since 114
// and behind a flag in Node 20's V8.
require("v8").setFlagsFromString("--experimental-wasm-relaxed-simd");

globalThis.require = require;
globalThis.fs = require("fs");
globalThis.path = path;
globalThis.TextEncoder = require("util").TextEncoder;
globalThis.TextDecoder = require("util").TextDecoder;
globalThis.performance ??= require("perf_hooks").performance;
globalThis.crypto ??= require("crypto");

const goroot = process.env.GOROOT || execSync("go env GOROOT", { env: { ...process.env, GOOS: "", GOARCH: "" } }).toString().trim();
require(path.join(goroot, "lib", "wasm", "wasm_exec.js"));

const go = new Go();
go.argv = process.argv.slice(2);
go.env = Object.assign({ TMPDIR: require("os").tmpdir() }, process.env);
go.exit = process.exit;
WebAssembly.instantiate(fs.readFileSync(process.argv[2]), go.importObject).then((result) => {
  globalThis.clefcheckMem = result.instance.exports.mem;
  process.on("exit", (code) => {
    if (code === 0 && !go.exited) {
      go._pendingEvent = { id: 0 };
      go._resume();
    }
  });
  return go.run(result.instance);
}).catch((err) => {
  console.error(err);
  process.exit(1);
});
