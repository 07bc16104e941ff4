// clefcheck's engine worker (the page's, and the audit's pool workers):
// runs engine.wasm (web/worker, built with the same Go as app.wasm, whose
// main is wasm/browser/worker.Serve) and hands it the messages. The
// protocol is wasm/browser/msg's (its doc.go lists every message): this
// file posts only {op: "error", msg} when engine.wasm does not load, and
// queues the messages that come before Go runs (Serve drains
// clefcheckQueue, then posts {op: "ready", simd_error}).
"use strict";
importScripts("../wasm_exec.js", "clefcheck.js");
self.clefcheckQueue = [];
self.onmessage = (e) => self.clefcheckQueue.push(e); // until Go takes over
const go = new Go();
WebAssembly.instantiateStreaming(fetch("engine.wasm" + self.location.search), go.importObject)
  .then((r) => {
    self.clefcheckMem = r.instance.exports.mem; // for the SIMD kernels (wasm/browser/worker/simd.go)
    go.run(r.instance);
  })
  .catch((err) => self.postMessage({ op: "error", msg: "engine.wasm: " + err }));
