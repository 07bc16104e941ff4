// clefcheck's audit worker: runs engine.wasm (web/worker, built with the
// same Go as app.wasm) and hands it the page's messages. See
// wasm/browser/worker.go for the protocol.
"use strict";
importScripts("../wasm_exec.js", "clefcheck.js");
self.clefcheckQueue = [];
self.onmessage = (e) => self.clefcheckQueue.push(e); // until Go takes over
const go = new Go();
WebAssembly.instantiateStreaming(fetch("engine.wasm" + self.location.search), go.importObject)
  .then((r) => {
    self.clefcheckMem = r.instance.exports.mem; // for the SIMD kernel (wasm/browser/simd.go)
    go.run(r.instance);
  })
  .catch((err) => self.postMessage({ op: "error", msg: "engine.wasm: " + err }));
