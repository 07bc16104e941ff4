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
self.clefcheckFetch = async function (url, method, headers, body, limit, signal) {
  const init = { method: method || "GET", headers: headers || {}, signal: signal, credentials: "omit", redirect: "follow" };
  if (body && body.byteLength > 0) init.body = body;
  const resp = await fetch(url, init);
  const hdrs = {};
  resp.headers.forEach((v, k) => { hdrs[k.toLowerCase()] = v; });
  let out = new Uint8Array(0), truncated = false;
  const len = Number(resp.headers.get("content-length"));
  if (resp.status === 206 && len > 0 && len <= limit && !resp.headers.get("content-encoding")) {
    // A range of known length: read natively in one piece (much faster
    // than chunk by chunk from JavaScript), and checked against the limit.
    const ab = await resp.arrayBuffer();
    out = new Uint8Array(ab, 0, Math.min(ab.byteLength, limit));
    return { status: resp.status, headers: hdrs, body: out, truncated: ab.byteLength > limit };
  }
  if (resp.body) {
    const reader = resp.body.getReader();
    // With a known length (and no decoding that could grow it) one buffer
    // of that size; otherwise grow by doubling.
    let cap = (len > 0 && len <= limit && !resp.headers.get("content-encoding")) ? len : 65536;
    let buf = new Uint8Array(Math.min(cap, limit > 0 ? limit : cap)), n = 0;
    for (;;) {
      const { done, value } = await reader.read();
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
  return { status: resp.status, headers: hdrs, body: out, truncated: truncated };
};

// clefcheckFetchRange fetches bytes [start, end] of url and resolves to an
// ArrayBuffer of exactly that length, or rejects: the engine worker fetches
// the audit pool workers' next segments with it while they compute, and
// transfers the buffers to them (no copy through its Go memory).
self.clefcheckFetchRange = async function (url, start, end, token) {
  const headers = { Range: "bytes=" + start + "-" + end };
  if (token) headers.Authorization = "Bearer " + token;
  const resp = await fetch(url, { headers: headers, credentials: "omit" });
  if (resp.status !== 206) throw new Error("HTTP " + resp.status + " for a range of " + url);
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(resp.headers.get("content-range") || "");
  if (!m || Number(m[1]) !== start || Number(m[2]) !== end) throw new Error("unexpected Content-Range for " + url);
  const len = Number(resp.headers.get("content-length"));
  if (len !== end - start + 1 || resp.headers.get("content-encoding")) throw new Error("unexpected Content-Length or Content-Encoding for " + url);
  const ab = await resp.arrayBuffer();
  if (ab.byteLength !== end - start + 1) throw new Error("short body for " + url);
  return ab;
};

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
