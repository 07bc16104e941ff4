//go:build browser

package browsertest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/wasmsimd"
)

// shaFloorJS hashes a file with the digest worker's SHA-256 kernel
// (wasmsimd's sha256, as public/digest.js runs it: 1 MiB copied into the
// module's memory per call) in Node, whose V8 is Chromium's: one stream,
// read with fs in 8 MiB pieces. It prints the digest and the seconds.
const shaFloorJS = `"use strict";
const fs = require("fs");
const [, , modPath, file] = process.argv;
const PIECE = 1 << 20, DATA = 64, IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const mem = new WebAssembly.Memory({ initial: Math.ceil((DATA + PIECE) / 65536) + 1 });
const compress = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(modPath)), { env: { mem } }).exports.sha256;
const heap = new Uint8Array(mem.buffer);
new Uint32Array(mem.buffer, 0, 8).set(IV);
const t0 = performance.now();
const fd = fs.openSync(file, "r"), buf = Buffer.alloc(8 << 20);
let len = 0, tail = Buffer.alloc(0);
for (;;) {
  const n = fs.readSync(fd, buf, 0, buf.length, null);
  if (n === 0) break;
  let b = Buffer.concat([tail, buf.subarray(0, n)]);
  const whole = b.length & ~63;
  for (let o = 0; o < whole; o += PIECE) { const p = b.subarray(o, Math.min(whole, o + PIECE)); heap.set(p, DATA); compress(0, DATA, p.length >> 6); }
  tail = Buffer.from(b.subarray(whole)); len += n;
}
let k = 56 - (len % 64); if (k <= 0) k += 64;
const pad = Buffer.alloc(k + 8); pad[0] = 0x80; pad.writeBigUInt64BE(BigInt(len) * 8n, k);
const last = Buffer.concat([tail, pad]); heap.set(last, DATA); compress(0, DATA, last.length >> 6);
const out = Buffer.alloc(32); new Uint32Array(mem.buffer, 0, 8).forEach((v, i) => out.writeUInt32BE(v, 4 * i));
console.log(out.toString("hex"), ((performance.now() - t0) / 1000).toFixed(3));
`

// shaFloor is the seconds the digest worker's SHA-256 kernel takes over
// file in V8, one stream (0 where Node is missing): the floor of an audit
// with digests, which hashes every byte of the file in one stream. Its
// digest is checked against crypto/sha256's.
func shaFloor(tb testing.TB, file string) float64 {
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Logf("no node here: no SHA-256 floor")
		return 0
	}
	dir := tb.TempDir()
	mod, script := filepath.Join(dir, "kernels.wasm"), filepath.Join(dir, "shafloor.js")
	if err := os.WriteFile(mod, wasmsimd.Module(), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(shaFloorJS), 0o644); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command(node, script, mod, file).CombinedOutput()
	f := strings.Fields(string(out))
	if err != nil || len(f) != 2 {
		tb.Fatalf("the SHA-256 floor: %v: %s", err, out)
	}
	secs, _ := strconv.ParseFloat(f[1], 64)
	fh, err := os.Open(file)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	h := sha256.New()
	io.Copy(h, fh)
	if want := hex.EncodeToString(h.Sum(nil)); f[0] != want {
		tb.Fatalf("the SHA-256 floor's kernel in V8 gave %s, crypto/sha256 %s", f[0], want)
	}
	return secs
}
