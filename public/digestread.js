// clefcheck's file reader for the digest worker (public/digest.js), which
// starts it: it reads a picked file (a Blob) in chunks and transfers each
// to the digest worker, in order. A Blob's bytes reach a worker through its
// own thread's event loop, so a worker busy hashing reads nothing
// meanwhile: here the reading has a thread of its own, and the digest
// worker's does nothing but hash.
//
//   {id, file: Blob, chunk, ahead}  read file chunk bytes at a time, at
//                                   most ahead chunks not yet taken:
//                                   answers {id, buf: ArrayBuffer, n} each
//                                   (transferred; its first n bytes are
//                                   the chunk), then {id, end: true};
//                                   {id, error, name} if a read fails
//                                   (name: the exception's)
//   {id, took: true, buf}           the digest worker hashed one chunk,
//                                   and hands its buffer back (optional):
//                                   the next chunks are read into it
//                                   (clefcheckReadBlob, a BYOB read)
//   {id, drop: true}                stop reading file id
//
// It says {ready: true} once it runs.
"use strict";
importScripts("clefcheck.js" + self.location.search); // clefcheckReadBlob
const reads = new Map(); // id → {room, wake: function | null, free: ArrayBuffers handed back}

async function readFile(id, file, chunk, ahead) {
  const r = { room: ahead, wake: null, free: [] };
  reads.set(id, r);
  const pending = [];
  let at = 0;
  try {
    while (at < file.size || pending.length > 0) {
      // Keep up to ahead reads in flight, within the room the digest
      // worker has left.
      while (pending.length < r.room && at < file.size) {
        const from = at, end = Math.min(file.size, at + chunk);
        pending.push(self.clefcheckReadBlob(file, from, end, r.free.pop() || new ArrayBuffer(chunk)).then((got) => {
          if (got.n !== end - from) throw new Error("read " + got.n + " of the " + (end - from) + " bytes at " + from + " (the file changed?)");
          return got;
        }));
        at += chunk;
      }
      if (pending.length === 0) {
        await new Promise((wake) => { r.wake = wake; });
        r.wake = null;
        if (reads.get(id) !== r) return;
        continue;
      }
      const { buf, n } = await pending.shift();
      if (reads.get(id) !== r) return;
      r.room--;
      self.postMessage({ id, buf, n }, [buf]);
    }
    self.postMessage({ id, end: true });
  } catch (err) {
    self.postMessage({ id, error: String(err && err.message ? err.message : err), name: err && err.name ? String(err.name) : undefined });
  } finally {
    if (reads.get(id) === r) reads.delete(id);
  }
}

self.onmessage = (e) => {
  const m = e.data;
  if (m.file) {
    readFile(m.id, m.file, m.chunk, m.ahead);
    return;
  }
  const r = reads.get(m.id);
  if (!r) return;
  if (m.drop) {
    reads.delete(m.id);
    if (r.wake) r.wake();
  } else if (m.took) {
    if (m.buf && m.buf.byteLength > 0 && r.free.length < 4) r.free.push(m.buf);
    r.room++;
    if (r.wake) r.wake();
  }
};
self.postMessage({ ready: true });
