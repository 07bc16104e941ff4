// clefcheck's engine worker (the page's, and the audit's pool workers):
// runs engine.wasm (web/worker, built with the same Go as app.wasm, whose
// main is wasm/browser/worker.Serve) and hands it the messages. The
// protocol is wasm/browser/msg's (its doc.go lists every message): this
// file posts only {op: "error", msg} when engine.wasm does not load or
// stops (a Go program that panicked or deadlocked answers nothing more:
// the page then hears why instead of waiting forever), and queues the
// messages that come before Go runs (Serve drains clefcheckQueue, then
// posts {op: "ready", simd_error}).
"use strict";
// The scripts carry this worker's query (its version, ?v=…), as engine.wasm
// does: a new deploy never pairs a fresh engine.wasm with an older script
// from the browser's HTTP cache. The workers it starts do the same.
importScripts("../wasm_exec.js" + self.location.search, "clefcheck.js" + self.location.search);
self.clefcheckQueue = [];
// A pool worker (its URL ends #pool) is first posted the dealer's compiled
// engine.wasm ({op: "module"}, wasm/browser/msg): instantiated here instead
// of fetched and compiled again, it shares the dealer's compiled code, and
// what V8 has already optimized of it. Without one it fetches its own.
const pool = self.location.hash === "#pool";
let waiting = pool;
self.onmessage = (e) => {
  if (waiting) {
    waiting = false;
    const d = e.data;
    if (d && d.op === "module") {
      start(d.module instanceof WebAssembly.Module ? d.module : null);
      return;
    }
    start(null);
  }
  self.clefcheckQueue.push(e); // until Go takes over
};
// The last lines Go wrote (wasm_exec.js writes its output with
// console.log), for the message if it stops.
const last = [];
for (const k of ["log", "error"]) {
  const f = console[k].bind(console);
  console[k] = (...a) => {
    last.push(a.join(" "));
    if (last.length > 12) last.shift();
    f(...a);
  };
}
const go = new Go();
let exitCode = 0;
const exit = go.exit.bind(go);
go.exit = (code) => {
  exitCode = code;
  exit(code);
};
function start(mod) {
  const compiled = mod ? Promise.resolve(mod) : WebAssembly.compileStreaming(fetch("engine.wasm" + self.location.search));
  compiled
    .then((m) => {
      self.clefcheckModule = m; // for this worker's own pool (wasm/browser/worker/poolstart.go)
      return WebAssembly.instantiate(m, go.importObject);
    })
    .then((inst) => {
      self.clefcheckMem = inst.exports.mem; // for the SIMD kernels (wasm/browser/worker/simd.go)
      return go.run(inst).then(() => {
        const tail = last.join("\n").slice(-1500);
        self.postMessage({ op: "error", msg: "engine.wasm stopped (exit code " + exitCode + ")" + (tail ? ": " + tail : "") });
      });
    })
    .catch((err) => self.postMessage({ op: "error", msg: "engine.wasm: " + err }));
}
if (!pool) start(null);
