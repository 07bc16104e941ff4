// clefcheck's cache writer: writes the entries of the browser's cache of
// byte ranges (wasm/source.Cache in the Origin Private File System) for the
// engine worker, which starts it on its first write (cacheWriter in
// public/clefcheck.js, which documents the messages). A
// FileSystemSyncAccessHandle's write blocks its thread until the bytes are
// in the file; here that thread is this one, not the engine worker's,
// whose thread deals the audit's spans. The entry's bytes come transferred
// and go back the same way, for the engine worker's next write.
"use strict";
self.clefcheckIsCacheWriter = true;
importScripts("clefcheck.js" + self.location.search); // the version, as worker.js
const dirs = new Map(); // the cache folder's name → its operations (a promise)
self.onmessage = async (e) => {
  const { id, dir, name, parts, remove } = e.data;
  try {
    if (!dirs.has(dir)) dirs.set(dir, self.clefcheckCacheOpen(dir));
    const ops = await dirs.get(dir).catch((err) => {
      dirs.delete(dir);
      throw err;
    });
    if (remove) {
      await ops.remove(name);
      self.postMessage({ id });
      return;
    }
    const back = await ops.write(name, parts);
    self.postMessage({ id, parts: back }, back);
  } catch (err) {
    // The buffers stay here: a write that timed out may still be writing
    // from them. The error keeps its name (a QuotaExceededError says why).
    const why = err && err.message ? (err.name && err.name !== "Error" ? err.name + ": " : "") + err.message : String(err);
    self.postMessage({ id, error: why });
  }
};
self.postMessage({ ready: true });
