// clefcheck's digest worker: the SHA-256 of an audit's files, computed on
// a thread of its own beside the engine worker, whose thread must stay free
// to read the audit's spans (a worker busy hashing does not drain its own
// fetches, and the download stalls meanwhile). The engine worker starts it
// (wasm/browser/worker/digest.go, which documents the messages) and sends
// the compression function it checked, wasm/wasmsimd's sha256, as bytes:
//
//   {code: Uint8Array}          compile the module (answers {ready: true})
//   {id, buf: ArrayBuffer, n, at, tag}
//                               hash n bytes of buf from at (at: 0 by
//                               default; n: the rest of buf) next into hash
//                               id, in the order they arrive; answers
//                               {ack: n, buf, tag}, the buffer handed back
//                               for reuse (a fresh ArrayBuffer of 8 MiB
//                               costs the engine worker more than filling
//                               one) with the tag it came with (a span's
//                               buffer goes back to the pool's dealer)
//   {id, sum: true}             answers {id, sum: Uint8Array(32)}: the digest
//                               of what came so far (more may follow)
//   {id, reset: true}           start hash id afresh
//   {id, drop: true}            forget hash id (a file's hash stops)
//   {id, file: Blob, chunk}     hash the whole file (a picked File) as hash
//                               id, read chunk bytes at a time by this
//                               worker's file reader (public/digestread.js,
//                               a thread of its own): answers {id, sum,
//                               seconds, reader: true} (no reader where
//                               that did not start, the file then read
//                               here) — the engine worker neither reads
//                               nor copies its bytes
//
// Any failure answers {id, error, name} (name: the exception's, e.g.
// NotReadableError for a picked file changed on disk since), and that hash
// answers errors from then on: the engine then reports that the files'
// SHA-256 could not be computed, never a wrong digest.
"use strict";
const IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const PIECE = 1 << 20; // bytes copied into the module's memory per call
const STATE = 0, DATA = 64; // byte offsets in the module's memory
let compress = null, heap = null;
const hashes = new Map(); // id → {state: Uint32Array(8), tail: Uint8Array(64), ntail, len}

function fresh() {
  return { state: Uint32Array.from(IV), tail: new Uint8Array(64), ntail: 0, len: 0 };
}

// blocks compresses src (whole 64-byte blocks) into h.state.
function blocks(h, src) {
  const words = new Uint32Array(heap.buffer, STATE, 8);
  words.set(h.state);
  for (let off = 0; off < src.length; off += PIECE) {
    const part = src.subarray(off, Math.min(src.length, off + PIECE));
    heap.set(part, DATA);
    compress(STATE, DATA, part.length >> 6);
  }
  h.state.set(new Uint32Array(heap.buffer, STATE, 8));
}

function write(h, b) {
  h.len += b.length;
  if (h.ntail > 0) {
    const c = Math.min(64 - h.ntail, b.length);
    h.tail.set(b.subarray(0, c), h.ntail);
    h.ntail += c;
    b = b.subarray(c);
    if (h.ntail < 64) return;
    blocks(h, h.tail);
    h.ntail = 0;
  }
  const whole = b.length & ~63;
  if (whole > 0) blocks(h, b.subarray(0, whole));
  h.tail.set(b.subarray(whole), 0);
  h.ntail = b.length - whole;
}

// sum is the digest of what h took, h unchanged.
function sum(h) {
  const c = { state: Uint32Array.from(h.state), tail: Uint8Array.from(h.tail), ntail: h.ntail, len: h.len };
  const bits = BigInt(h.len) * 8n;
  let k = 56 - (h.len % 64);
  if (k <= 0) k += 64;
  const pad = new Uint8Array(k + 8);
  pad[0] = 0x80;
  new DataView(pad.buffer).setBigUint64(k, bits, false);
  write(c, pad);
  const out = new Uint8Array(32);
  const dv = new DataView(out.buffer);
  c.state.forEach((v, i) => dv.setUint32(4 * i, v, false));
  return out;
}

// fileReader resolves to the worker that reads picked files for this one
// (public/digestread.js, which documents its messages), started on first
// use; to null where it did not start (within 10 s) or has failed since —
// the files are then read here. A Blob's bytes reach a worker through its
// own event loop: read here, a chunk arrives only between two chunks'
// hashing, and reading and hashing take turns.
let reader;
function fileReader() {
  if (reader !== undefined) return reader.started;
  let ready;
  const st = { started: new Promise((r) => { ready = r; }), on: new Map() };
  reader = st;
  let w;
  try {
    w = new Worker(new URL("digestread.js" + self.location.search, self.location.href)); // with the version
  } catch (e) {
    ready(null);
    return st.started;
  }
  // fail gives the reader up: the files it was reading are read here
  // again from their start, and so are the next ones.
  const fail = () => {
    clearTimeout(late);
    ready(null);
    reader = { started: Promise.resolve(null), on: new Map() };
    w.terminate();
    for (const f of st.on.values()) f({ broken: true });
    st.on.clear();
  };
  const late = setTimeout(fail, 10000); // it did not start
  st.fail = fail;
  w.onmessage = (e) => {
    if (e.data.ready) {
      clearTimeout(late);
      ready(w);
      return;
    }
    const f = st.on.get(e.data.id);
    if (f) f(e.data);
  };
  w.onerror = (e) => {
    e.preventDefault();
    fail();
  };
  return st.started;
}

// hashFile hashes the whole of file as hash id, reading it in chunks: in
// the file reader's thread when it runs (viaReader), else here, the next
// chunks' reads under way while one is hashed. Dropped meanwhile, it stops.
const AHEAD = 2; // chunks read ahead
async function hashFile(id, file, chunk) {
  let h = fresh();
  hashes.set(id, h);
  const t0 = performance.now();
  const w = await fileReader();
  if (hashes.get(id) !== h) return; // dropped meanwhile
  if (w) {
    if (await viaReader(w, id, h, file, chunk, t0)) return;
    if (hashes.get(id) !== h) return;
    h = fresh(); // the reader failed: from the start, here
    hashes.set(id, h);
  }
  const reads = [];
  let at = 0;
  const more = () => {
    while (reads.length < AHEAD && at < file.size) {
      reads.push(file.slice(at, Math.min(file.size, at + chunk)).arrayBuffer());
      at += chunk;
    }
  };
  try {
    more();
    while (reads.length > 0) {
      const b = new Uint8Array(await reads.shift());
      if (hashes.get(id) !== h) return;
      more();
      write(h, b);
    }
    if (h.len !== file.size) throw new Error("read " + h.len + " of the file's " + file.size + " bytes");
    self.postMessage({ id, sum: sum(h), seconds: (performance.now() - t0) / 1000 });
  } catch (err) {
    self.postMessage({ id, error: String(err && err.message ? err.message : err), name: err && err.name ? String(err.name) : undefined });
  } finally {
    if (hashes.get(id) === h) hashes.delete(id);
  }
}

// viaReader hashes file as hash h (id), its chunks read by the file
// reader w; each one hashed is acknowledged, so that the reader keeps at
// most READER_AHEAD chunks read and not hashed. It resolves to true once
// it has answered (or the hash was dropped), false if the reader failed
// (it said nothing for READER_IDLE ms, or died): the caller then reads the
// file itself.
const READER_AHEAD = 3;
const READER_IDLE = 60000;
function viaReader(w, id, h, file, chunk, t0) {
  const st = reader;
  return new Promise((done) => {
    let idle;
    const end = (m, ok) => {
      clearTimeout(idle);
      st.on.delete(id);
      if (ok && hashes.get(id) === h) hashes.delete(id);
      if (m) self.postMessage(m);
      done(ok);
    };
    const alive = () => {
      clearTimeout(idle);
      idle = setTimeout(() => st.fail(), READER_IDLE);
    };
    alive();
    st.on.set(id, (d) => {
      if (d.broken) {
        end(null, false);
      } else if (hashes.get(id) !== h) { // dropped
        w.postMessage({ id, drop: true });
        end(null, true);
      } else if (d.error !== undefined) {
        end({ id, error: d.error, name: d.name }, true);
      } else if (d.buf) {
        alive();
        write(h, new Uint8Array(d.buf, 0, d.n === undefined ? d.buf.byteLength : d.n));
        w.postMessage({ id, took: true, buf: d.buf }, [d.buf]); // read the next chunks into it
      } else if (d.end) {
        end(h.len === file.size ? { id, sum: sum(h), seconds: (performance.now() - t0) / 1000, reader: true }
          : { id, error: "read " + h.len + " of the file's " + file.size + " bytes" }, true);
      }
    });
    w.postMessage({ id, file, chunk, ahead: READER_AHEAD });
  });
}

self.onmessage = (e) => {
  const m = e.data;
  try {
    if (m.code) {
      const mem = new WebAssembly.Memory({ initial: Math.ceil((DATA + PIECE) / 65536) + 1 });
      const inst = new WebAssembly.Instance(new WebAssembly.Module(m.code), { env: { mem } });
      compress = inst.exports.sha256;
      heap = new Uint8Array(mem.buffer);
      self.postMessage({ ready: true });
      return;
    }
    if (!compress) throw new Error("no module compiled");
    if (m.drop) {
      hashes.delete(m.id);
      const f = reader && reader.on.get(m.id);
      if (f) f({}); // a file being read: the reader stops
      return;
    }
    if (m.file) {
      hashFile(m.id, m.file, m.chunk > 0 ? m.chunk : 16 << 20);
      return;
    }
    let h = hashes.get(m.id);
    if (!h || m.reset) {
      h = fresh();
      hashes.set(m.id, h);
    }
    if (h.failed) throw new Error(h.failed);
    if (m.buf) {
      const at = m.at > 0 ? m.at : 0, n = m.n === undefined ? m.buf.byteLength - at : m.n;
      write(h, new Uint8Array(m.buf, at, n));
      self.postMessage({ ack: n, buf: m.buf, tag: m.tag }, [m.buf]);
    } else if (m.sum) {
      self.postMessage({ id: m.id, sum: sum(h) });
    }
  } catch (err) {
    const msg = String(err && err.message ? err.message : err);
    // That hash missed bytes: it answers no digest any more.
    if (m.id !== undefined) {
      const h = hashes.get(m.id) || fresh();
      h.failed = msg;
      hashes.set(m.id, h);
    }
    // The buffer goes back with its tag even so (its dealer keeps it).
    const back = m.buf && m.buf.byteLength > 0 ? m.buf : undefined;
    self.postMessage({ id: m.id, error: msg, ack: m.buf ? (m.n === undefined ? m.buf.byteLength - (m.at > 0 ? m.at : 0) : m.n) : 0, tag: m.tag, buf: back }, back ? [back] : []);
  }
};
