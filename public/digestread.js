// clefcheck's file reader for the digest worker (public/digest.js), which
// starts it: it reads a picked file (a Blob) in chunks and transfers each
// to the digest worker, in order. A Blob's bytes reach a worker through its
// own thread's event loop, so a worker busy hashing reads nothing
// meanwhile: here the reading has a thread of its own, and the digest
// worker's does nothing but hash.
//
//   {id, file: Blob, chunk, ahead}  read file chunk bytes at a time, at
//                                   most ahead chunks not yet taken:
//                                   answers {id, buf: ArrayBuffer} each
//                                   (transferred), then {id, end: true};
//                                   {id, error} if a read fails
//   {id, took: true}                the digest worker hashed one chunk
//   {id, drop: true}                stop reading file id
//
// It says {ready: true} once it runs.
"use strict";
const reads = new Map(); // id → {room: number, wake: function | null}

async function readFile(id, file, chunk, ahead) {
  const r = { room: ahead, wake: null };
  reads.set(id, r);
  const pending = [];
  let at = 0;
  try {
    while (at < file.size || pending.length > 0) {
      // Keep up to ahead reads in flight, within the room the digest
      // worker has left.
      while (pending.length < r.room && at < file.size) {
        pending.push(file.slice(at, Math.min(file.size, at + chunk)).arrayBuffer());
        at += chunk;
      }
      if (pending.length === 0) {
        await new Promise((wake) => { r.wake = wake; });
        r.wake = null;
        if (reads.get(id) !== r) return;
        continue;
      }
      const buf = await pending.shift();
      if (reads.get(id) !== r) return;
      r.room--;
      self.postMessage({ id, buf }, [buf]);
    }
    self.postMessage({ id, end: true });
  } catch (err) {
    self.postMessage({ id, error: String(err && err.message ? err.message : err) });
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
    r.room++;
    if (r.wake) r.wake();
  }
};
self.postMessage({ ready: true });
