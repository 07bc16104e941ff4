// clefcheck's small browser helpers, used by the Go code in app.wasm and in
// the engine workers (wasm/browser: clefcheckFetch is browser.Fetch's
// transport; clefcheckFetchRange the audit dealer's read-ahead,
// wasm/browser/worker/dealer.go). No data leaves the page except the
// requests the user asked for.
"use strict";

// clefcheckFetch performs one request and reads its body in JavaScript,
// stopping at limit bytes (the rest is cancelled, never buffered), so Go
// gets the whole body with one call instead of one per network chunk.
// Resolves to {status, headers, body: Uint8Array, truncated}.
self.clefcheckFetch = async function (url, method, headers, body, limit, signal, answerMs) {
  const init = { method: method || "GET", headers: headers || {}, signal: signal, credentials: "omit", redirect: "follow" };
  if (body && body.byteLength > 0) init.body = body;
  const resp = await clefcheckAnswered(url, init, answerMs);
  const hdrs = {};
  resp.headers.forEach((v, k) => { hdrs[k.toLowerCase()] = v; });
  let out = new Uint8Array(0), truncated = false;
  const len = Number(resp.headers.get("content-length"));
  if (resp.status === 206 && len > 0 && len <= limit && !resp.headers.get("content-encoding")) {
    // A range of known length: read natively in one piece (much faster
    // than chunk by chunk from JavaScript), and checked against the limit.
    const ab = await clefcheckBody(resp.arrayBuffer(), signal, -1);
    out = new Uint8Array(ab, 0, Math.min(ab.byteLength, limit));
    return { status: resp.status, headers: hdrs, body: out, truncated: ab.byteLength > limit, url: resp.url };
  }
  if (resp.body) {
    const reader = resp.body.getReader();
    // With a known length (and no decoding that could grow it) one buffer
    // of that size; otherwise grow by doubling.
    let cap = (len > 0 && len <= limit && !resp.headers.get("content-encoding")) ? len : 65536;
    let buf = new Uint8Array(Math.min(cap, limit > 0 ? limit : cap)), n = 0;
    for (;;) {
      const { done, value } = await clefcheckBody(reader.read(), signal, n);
      if (done) break;
      let chunk = value;
      if (limit > 0 && n + chunk.length > limit) {
        chunk = chunk.subarray(0, limit - n);
        truncated = true;
      }
      if (n + chunk.length > buf.length) {
        const grown = new Uint8Array(Math.max(buf.length * 2, n + chunk.length));
        grown.set(buf.subarray(0, n));
        buf = grown;
      }
      buf.set(chunk, n);
      n += chunk.length;
      if (truncated) {
        reader.cancel().catch(() => {});
        break;
      }
    }
    out = buf.subarray(0, n);
  }
  return { status: resp.status, headers: hdrs, body: out, truncated: truncated, url: resp.url };
};

// clefcheckAnswered is fetch(url, init), aborted when its answer (the
// response's headers) has not come within ms milliseconds (none: no
// limit): it then rejects with an Error named ClefcheckNoAnswer, which the
// engine takes for a timeout and tries again (fetch.NoAnswer). Aborting
// init.signal aborts it, before and after the answer.
async function clefcheckAnswered(url, init, ms) {
  if (!(ms > 0)) return fetch(url, init);
  const ac = new AbortController();
  const outer = init.signal;
  if (outer) {
    if (outer.aborted) ac.abort(outer.reason);
    else outer.addEventListener("abort", () => ac.abort(outer.reason), { once: true });
  }
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    ac.abort();
  }, ms);
  try {
    return await fetch(url, Object.assign({}, init, { signal: ac.signal }));
  } catch (e) {
    if (late && !(outer && outer.aborted)) {
      const err = new Error("no answer within " + ms / 1000 + " s");
      err.name = "ClefcheckNoAnswer";
      throw err;
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

// clefcheckBody awaits a read of a response's body: a body cut short (the
// connection reset or closed mid-body) rejects with an Error that says so,
// not with fetch's TypeError, which Go takes for a request that got no
// answer (a refused origin, a host that cannot be reached).
async function clefcheckBody(p, signal, n) {
  try {
    return await p;
  } catch (e) {
    if (signal && signal.aborted) throw e;
    throw new Error("the response body was cut short" + (n >= 0 ? " after " + n + " bytes" : ""));
  }
}

// clefcheckFetchRange makes one request for bytes [start, end] of url (an
// Authorization header only when token is given) and resolves to
// {status, headers, url, buf}: buf is an ArrayBuffer of the body for a 206
// (null otherwise; the body of any other answer is not read). A request
// that got no answer rejects with fetch's TypeError, a body cut short with
// an Error that says so. The engine worker's dealer (Go, with its retries:
// source.HTTP.ReadWith) fetches the audit pool workers' next segments with
// it while they compute, and transfers the buffers to them (no copy through
// its Go memory).
self.clefcheckFetchRange = async function (url, start, end, token, signal, answerMs) {
  const headers = { Range: "bytes=" + start + "-" + end };
  if (token) headers.Authorization = "Bearer " + token;
  const resp = await clefcheckAnswered(url, { headers: headers, credentials: "omit", signal: signal }, answerMs);
  const hdrs = {};
  resp.headers.forEach((v, k) => { hdrs[k.toLowerCase()] = v; });
  let buf = null;
  if (resp.status === 206) buf = await clefcheckBody(resp.arrayBuffer(), signal, -1);
  else if (resp.body) resp.body.cancel().catch(() => {});
  return { status: resp.status, headers: hdrs, url: resp.url, buf: buf };
};

// clefcheckCacheOpen opens (creating it) the folder name of the Origin
// Private File System where the engine workers keep the byte ranges they
// read from URLs (wasm/source.Cache, through wasm/browser/opfs.go), and
// resolves to its entries' operations. Only dedicated workers (nested ones
// too) have FileSystemSyncAccessHandle: elsewhere it rejects. Reads open
// an entry "read-only", so that several workers read it at once; an entry
// is written once, whole (a write refused for the quota rejects with the
// browser's QuotaExceededError). list(false) names the entries without
// opening them (their sizes -1): the pool workers list so while the
// engine worker writes. Every operation rejects if the browser's storage
// has not answered within a while, so that a stuck one turns the cache off
// instead of stalling the read.
self.clefcheckCacheOpen = async function (name) {
  if (!(self.navigator && navigator.storage && navigator.storage.getDirectory)) {
    throw new Error("this browser has no Origin Private File System");
  }
  if (!(self.FileSystemFileHandle && "createSyncAccessHandle" in FileSystemFileHandle.prototype)) {
    throw new Error("no FileSystemSyncAccessHandle here (dedicated workers only)");
  }
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(name, { create: true });
  // within runs op(at), rejecting if it has not settled in s seconds; op
  // says where it is with at(step), which the rejection names.
  const within = (op, s, what) => {
    let timer, step = "start";
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error("the browser's storage did not " + what + " within " + s + " s (at " + step + ")")), s * 1000);
    });
    return Promise.race([op((x) => { step = x; }), late]).finally(() => clearTimeout(timer));
  };
  // One operation at a time; each keeps its file handle referenced (held)
  // until it has settled: a createSyncAccessHandle() whose handle was
  // collected meanwhile has been seen never to settle, under the churn of
  // large buffers.
  const held = new Set();
  let last = Promise.resolve();
  const serial = (f) => {
    const p = last.then(f, f);
    last = p.catch(() => {});
    return p;
  };
  return {
    list(sizes) {
      return serial(() => within(async (at) => {
        const out = [];
        for await (const [n, h] of dir.entries()) {
          if (h.kind !== "file") continue;
          if (!sizes) {
            out.push([n, -1, 0]);
            continue;
          }
          try {
            const f = await h.getFile();
            out.push([n, f.size, f.lastModified]);
          } catch (e) { /* being written: not listed */ }
        }
        return out;
      }, 60, "list the cache"));
    },
    read(n, off, len) {
      return serial(() => within(async (at) => {
        at("getFileHandle");
        const h = await dir.getFileHandle(n);
        held.add(h);
        try {
          at("createSyncAccessHandle");
          const a = await h.createSyncAccessHandle({ mode: "read-only" });
          at("read");
          try {
            const buf = new Uint8Array(len);
            const got = a.read(buf, { at: off });
            return got === len ? buf : buf.subarray(0, got);
          } finally {
            a.close();
          }
        } finally {
          held.delete(h);
        }
      }, 30, "read " + n));
    },
    // write resolves to the parts' ArrayBuffers, for reuse: the cache's
    // writer (cacheWriter) hands them back, transferred.
    write(n, parts) {
      const wr = cacheWriter();
      if (wr) {
        // A writer that did not start has not taken the bytes: this
        // worker writes them (and the next entries) itself.
        return wr.started.then((ok) => ok ? wr.call({ dir: name, name: n, parts }, parts, 45, "write " + n) : this.write(n, parts));
      }
      return serial(() => within(async (at) => {
        at("getFileHandle");
        const h = await dir.getFileHandle(n, { create: true });
        held.add(h);
        try {
          at("createSyncAccessHandle");
          const a = await h.createSyncAccessHandle();
          at("write");
          try {
            a.truncate(0);
            let pos = 0;
            for (const p of parts) {
              const k = a.write(p, { at: pos });
              if (k !== p.byteLength) throw new Error("short write: " + k + " of " + p.byteLength + " bytes");
              pos += k;
            }
            a.flush();
          } finally {
            a.close();
          }
        } finally {
          held.delete(h);
        }
        return [...new Set(parts.map((p) => p.buffer))];
      }, 30, "write " + n));
    },
    // remove goes to the cache's writer while it runs: after the write of
    // n it may still be doing (a write that timed out), never beside it.
    remove(n) {
      const wr = cacheWriter();
      if (wr) {
        return wr.started.then((ok) => ok ? wr.call({ dir: name, name: n, remove: true }, [], 20, "remove " + n) : this.remove(n));
      }
      return serial(() => within(() => dir.removeEntry(n), 10, "remove " + n));
    },
  };
};

// cacheWriter is the worker that writes the cache's entries for this one
// (public/cachewrite.js), started on the first write; null where there is
// none (in the writer itself, or where no worker starts). A
// FileSystemSyncAccessHandle's write blocks its thread until the bytes are
// in the file, and the engine worker's thread is what deals the audit's
// spans: written there, a 32 MB entry stalls the audit for as long as the
// write takes. The writer answers each {id, dir, name, parts} with {id,
// parts} (the buffers handed back) or {id, error}, and {id, dir, name,
// remove: true} with {id} or {id, error}; it says {ready: true} once it
// runs. Until then writes wait for it (started); if it does not start
// within 10 s, they are done here. If it fails, or does not answer a call
// in time, it is given up: the calls it had fail (the cache then turns
// itself off, the audit reading from the network).
let cacheWriterState;
function cacheWriter() {
  if (cacheWriterState !== undefined) return cacheWriterState.broken ? null : cacheWriterState;
  cacheWriterState = { broken: true };
  if (self.clefcheckIsCacheWriter || typeof Worker !== "function" || !self.location) return null;
  let w;
  try {
    w = new Worker(new URL("cachewrite.js" + self.location.search, self.location.href)); // with the version
  } catch (e) {
    return null;
  }
  const calls = new Map();
  let next = 0, ready;
  const st = {
    broken: false,
    started: new Promise((resolve) => { ready = resolve; }),
    // call posts m (with the parts' buffers transferred) and resolves to
    // the answer's parts; it rejects with the writer's error, or if no
    // answer came within s seconds — the writer is then given up.
    call(m, parts, s, what) {
      return new Promise((resolve, reject) => {
        const id = ++next;
        const timer = setTimeout(() => giveUp("did not " + what + " within " + s + " s"), s * 1000);
        calls.set(id, { resolve, reject, timer });
        w.postMessage({ id, ...m }, [...new Set(parts.map((p) => p.buffer))]);
      });
    },
  };
  // giveUp stops the writer: the calls waiting fail, the next writes are
  // done by this worker.
  const giveUp = (why) => {
    if (st.broken) return;
    st.broken = true;
    clearTimeout(late);
    ready(false);
    w.terminate();
    for (const c of calls.values()) {
      clearTimeout(c.timer);
      c.reject(new Error("the cache's writer " + why));
    }
    calls.clear();
  };
  w.onmessage = (e) => {
    const d = e.data;
    if (d.ready) {
      clearTimeout(late);
      if (!st.broken) ready(true);
      return;
    }
    const c = calls.get(d.id);
    if (!c) return;
    calls.delete(d.id);
    clearTimeout(c.timer);
    if (d.error !== undefined) c.reject(new Error(d.error));
    else c.resolve(d.parts);
  };
  w.onerror = (e) => {
    e.preventDefault();
    giveUp("failed: " + (e.message || "it did not start"));
  };
  const late = setTimeout(() => giveUp("did not start within 10 s"), 10000);
  cacheWriterState = st;
  return st;
}

// clefcheckCacheWriterName names who writes this worker's cache entries.
self.clefcheckCacheWriterName = () =>
  cacheWriterState && !cacheWriterState.broken ? "its writer (cachewrite.js)" : "the engine worker";

// clefcheckAnswers resolves to whether url's host answers at all: a
// no-cors request needs no CORS from the server (its reply stays opaque),
// so it rejects only when nothing answers. The Decisions page asks it to
// tell a CORS refusal from a server that is down, which fetch() reports
// alike.
self.clefcheckAnswers = async function (url) {
  try {
    await fetch(url, { mode: "no-cors", credentials: "omit", cache: "no-store", signal: AbortSignal.timeout(5000) });
    return true;
  } catch (e) {
    return false;
  }
};
