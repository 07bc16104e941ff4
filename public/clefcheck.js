// clefcheck's small browser helpers, used by the Go code in app.wasm and in
// the engine workers (wasm/browser: clefcheckFetch is browser.Fetch's
// transport; clefcheckFetchRange the audit dealer's read-ahead,
// wasm/browser/worker/dealer.go). No data leaves the page except the
// requests the user asked for.
"use strict";

// clefcheckFetch performs one request and reads its body in JavaScript,
// stopping at limit bytes (the rest is cancelled, never buffered), so Go
// gets the whole body with one call instead of one per network chunk.
// Resolves to {status, headers, body: Uint8Array, truncated}. With into
// (an ArrayBuffer, transferred: clefcheckReadInto) a range of known length
// that fits is read into it, and body is a view of its memory.
self.clefcheckFetch = async function (url, method, headers, body, limit, signal, answerMs, into) {
  const init = { method: method || "GET", headers: headers || {}, signal: signal, credentials: "omit", redirect: "follow" };
  // A range read skips the browser's HTTP cache ("no-store"): an adapter's
  // ranges are read once (the engine keeps its own cache), and Chromium's
  // cache serialises concurrent ranges of one URL, writing each to disk — a
  // range that met another's entry was cut off a few milliseconds in and
  // sent again (31 of the twin's 48 spans at 125 MB/s, each costing the
  // link the megabytes already on their way).
  if (Object.keys(init.headers).some((k) => k.toLowerCase() === "range")) init.cache = "no-store";
  if (body && body.byteLength > 0) init.body = body;
  const resp = await clefcheckAnswered(url, init, answerMs);
  const hdrs = {};
  resp.headers.forEach((v, k) => { hdrs[k.toLowerCase()] = v; });
  let out = new Uint8Array(0), truncated = false;
  const len = Number(resp.headers.get("content-length"));
  if (resp.status === 206 && len > 0 && len <= limit && !resp.headers.get("content-encoding")) {
    // A range of known length: read natively in one piece (much faster
    // than chunk by chunk from JavaScript), and checked against the limit.
    if (into && into.byteLength >= len && resp.body) {
      const r = await clefcheckBody(self.clefcheckReadInto(resp.body, into, len), signal, -1);
      if (r && r.more) throw new Error("the response body was longer than its Content-Length (" + len + " bytes)");
      if (r) return { status: resp.status, headers: hdrs, body: new Uint8Array(r.buf, 0, r.n), truncated: false, url: resp.url };
    }
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

// clefcheckReadInto reads up to want bytes of a byte stream (a Response's
// body, a Blob's stream()) into buf, an ArrayBuffer of at least want bytes,
// with a BYOB reader: the browser fills memory the caller already has
// instead of a fresh ArrayBuffer per read, which V8 maps and zeroes (on a
// virtual machine whose page faults are dear, the twin's 1.40 GB read from
// a picked file took 6.0-7.0 s by arrayBuffer() and 1.9-2.5 s into reused
// buffers; from a loopback URL 17-21 s against 9-11 s). It resolves to
// {buf, n, more}: buf the same memory handed back (a BYOB read transfers
// the buffer it fills: the one passed in is detached from then on, even if
// the read fails), n the bytes read, more whether the stream had more than
// want (it is then cancelled). It resolves to null, buf untouched, where
// the stream is not a byte stream (the caller reads it as before).
// buf may instead be an Array of ArrayBuffers (pieces: of at least want
// bytes in all), filled one after the other; it then resolves to
// {bufs, n, more}, bufs the same pieces handed back in order.
//
// The stream and its reader are held (reading) until the read ends: in
// Chromium 156 a Blob's stream that nothing else referred to was
// collected mid-read, and its read then never ended (eight 32 MiB reads at
// once: 1 run in 6 hung, and every run with a collection forced each 30
// ms; none held so).
const reading = new Set();

// clefcheckRetire stops a worker this one started (the audit's pool:
// wasm/browser/worker/poolstart.go): at once if it runs (now), else once it
// has loaded and says so, or fails. A worker stopped while its scripts
// load fails with a NetworkError that Chromium reports in this worker's
// own scope, as if this worker had failed; its handlers are JavaScript's
// from now on (Go's are released).
self.clefcheckRetire = (w, now) => {
  const end = (e) => {
    if (e && e.type === "error" && e.preventDefault) e.preventDefault();
    w.terminate();
  };
  w.onmessage = end;
  w.onerror = end;
  if (now) w.terminate();
};

// clefcheckRoom is how many bytes into holds: an ArrayBuffer, or an Array
// of them (pieces), 0 when there is none.
const clefcheckRoom = (into) => (!into ? 0 : Array.isArray(into) ? into.reduce((sum, b) => sum + b.byteLength, 0) : into.byteLength);

self.clefcheckReadInto = async function (stream, buf, want) {
  let reader;
  try {
    reader = stream.getReader({ mode: "byob" });
  } catch (e) {
    return null;
  }
  const held = { stream, reader };
  reading.add(held);
  const parts = Array.isArray(buf) ? buf.slice() : [buf];
  const out = (n, more) => (Array.isArray(buf) ? { bufs: parts, n, more } : { buf: parts[0], n, more });
  try {
    let n = 0, i = 0, at = 0; // n bytes read, at of them into parts[i]
    while (n < want) {
      if (at === parts[i].byteLength) {
        if (i + 1 === parts.length) return out(n, false); // no room left: short
        i++;
        at = 0;
        continue;
      }
      const { done, value } = await reader.read(new Uint8Array(parts[i], at, Math.min(parts[i].byteLength - at, want - n)));
      if (value) parts[i] = value.buffer;
      if (done) return out(n, false);
      n += value.byteLength;
      at += value.byteLength;
    }
    // Full: one more byte tells a stream that is longer than asked.
    const { done } = await reader.read(new Uint8Array(1));
    if (!done) reader.cancel().catch(() => {});
    return out(n, !done);
  } finally {
    reading.delete(held);
  }
};

// clefcheckReadBlob reads bytes [start, end) of a Blob (a picked File) into
// into (an ArrayBuffer of at least end-start bytes, or an Array of them,
// pieces of that many in all; transferred: clefcheckReadInto), or into a
// fresh ArrayBuffer where into is missing or a Blob's stream is not a byte
// stream; resolves to {buf, n}, or {bufs, n} for the pieces.
// The slice is held too while it is read (reading).
self.clefcheckReadBlob = async function (blob, start, end, into) {
  const part = blob.slice(start, end);
  reading.add(part);
  try {
    const room = clefcheckRoom(into);
    if (into && room >= end - start) {
      let r;
      try {
        r = await self.clefcheckReadInto(part.stream(), into, end - start);
      } catch (err) {
        // A stream says only "TypeError: network error" when the file
        // changed on disk since it was picked; a one-byte read says what
        // arrayBuffer() says (NotReadableError), which the engine reports
        // as such (wasm/browser.BlobError). Any other failure stands.
        await blob.slice(start, Math.min(end, start + 1)).arrayBuffer();
        throw err;
      }
      if (r) return { buf: r.buf, bufs: r.bufs, n: r.more ? end - start + 1 : r.n };
    }
    const buf = await part.arrayBuffer();
    return { buf, n: buf.byteLength };
  } finally {
    reading.delete(part);
  }
};

// clefcheckFetchRange makes one request for bytes [start, end] of url (an
// Authorization header only when token is given) and resolves to
// {status, headers, url, buf}: buf is an ArrayBuffer of the body for a 206
// (null otherwise; the body of any other answer is not read). A request
// that got no answer rejects with fetch's TypeError, a body cut short with
// an Error that says so. The engine worker's dealer (Go, with its retries:
// source.HTTP.ReadWith) fetches the audit pool workers' next segments with
// it while they compute, and transfers the buffers to them (no copy through
// its Go memory). With into (an ArrayBuffer of at least end-start+1
// bytes, or an Array of them with that many in all, then transferred:
// clefcheckReadInto) the body is read into it, and comes back as buf, or
// as bufs for the Array; n is the body's length (end-start+2 for one
// longer than the range), buf's byteLength may be more.
self.clefcheckFetchRange = async function (url, start, end, token, signal, answerMs, into) {
  const headers = { Range: "bytes=" + start + "-" + end };
  if (token) headers.Authorization = "Bearer " + token;
  // No HTTP cache, as for clefcheckFetch's range reads (there, why).
  const resp = await clefcheckAnswered(url, { headers: headers, credentials: "omit", cache: "no-store", signal: signal }, answerMs);
  const hdrs = {};
  resp.headers.forEach((v, k) => { hdrs[k.toLowerCase()] = v; });
  let buf = null, n = 0;
  const want = end - start + 1;
  const room = clefcheckRoom(into);
  if (resp.status === 206 && into && room >= want && resp.body) {
    const r = await clefcheckBody(self.clefcheckReadInto(resp.body, into, want), signal, -1);
    if (r) return { status: resp.status, headers: hdrs, url: resp.url, buf: r.buf, bufs: r.bufs, n: r.more ? want + 1 : r.n };
  }
  if (resp.status === 206) {
    buf = await clefcheckBody(resp.arrayBuffer(), signal, -1);
    n = buf.byteLength;
  } else if (resp.body) resp.body.cancel().catch(() => {});
  return { status: resp.status, headers: hdrs, url: resp.url, buf: buf, n: n };
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
