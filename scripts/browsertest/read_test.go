//go:build browser

package browsertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserReadInto: the reads into kept buffers (clefcheckReadInto,
// clefcheckReadBlob, clefcheckFetchRange and clefcheckFetch with a buffer,
// in public/clefcheck.js) give the right bytes and lengths in Chromium —
// a range read whole, a body longer than asked (flagged, never silently
// cut; Chromium may refuse it first), a body shorter than its Content-Range (its length, which the
// engine retries), a body cut mid-way (rejected as cut short), a slice of
// a Blob and one past its end, pieces (an Array of buffers, from a Blob
// and from a URL) — transfer the buffer they fill, and leave
// a stream that is not a byte stream to the caller (null, its buffer
// untouched).
func TestBrowserReadInto(t *testing.T) {
	e := harness(t)
	site := filepath.Join(t.TempDir(), "site")
	e.clefcheck(t, "site", "--out", site, "--web", e.web, "--world", e.world)
	files := staticHost(site, "")
	const size = 3 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*31 + i>>11)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/data": // a plain range server
			http.ServeContent(w, r, "data", time.Time{}, bytes.NewReader(data))
		case "/long": // bytes 0-99 said, 150 sent (no Content-Length)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-99/%d", size))
			w.WriteHeader(http.StatusPartialContent)
			w.(http.Flusher).Flush()
			w.Write(data[:150])
		case "/short": // bytes 0-99 said, 50 sent, cleanly ended
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-99/%d", size))
			w.WriteHeader(http.StatusPartialContent)
			w.(http.Flusher).Flush()
			w.Write(data[:50])
		case "/cut": // 2 MiB promised, 1 MiB sent, then the connection dies
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", 2<<20-1, size))
			w.Header().Set("Content-Length", fmt.Sprint(2<<20))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(data[:1<<20])
			w.(http.Flusher).Flush()
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
		default:
			files.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	p := newTab(t, tabLimit)
	p.open(hs.URL+"/", "#load-demo")
	// Each case answers {n, more, cap, detached, good (the first
	// min(n, upto) bytes are data's from off: the byte that tells a body
	// longer than asked is read past the buffer, never into it), error}.
	js := `(async () => {
		const want = (i) => ((i * 31 + (i >> 11)) & 255);
		const good = (buf, n, off) => { const b = new Uint8Array(buf, 0, n); for (let i = 0; i < n; i++) if (b[i] !== want(off + i)) return false; return true; };
		const data = new Uint8Array(` + fmt.Sprint(size) + `); for (let i = 0; i < data.length; i++) data[i] = want(i);
		const blob = new Blob([data]);
		const run = async (f, off, upto = Infinity) => { const into = new ArrayBuffer(4 << 20); try { const r = await f(into);
			if (r === null) return {null: true, detached: into.byteLength === 0};
			const buf = r.buf || r.body.buffer, n = r.n !== undefined ? r.n : r.body.byteLength;
			return {n, more: !!(r.more || r.truncated), cap: buf.byteLength, detached: into.byteLength === 0, good: good(buf, Math.min(n, buf.byteLength, upto), off), status: r.status || 0};
		} catch (e) { return {error: String(e.message || e), detached: into.byteLength === 0} } };
		// Eight reads at once of a 72 MiB Blob, 4 MiB each, into reused
		// buffers, while the page makes garbage (collections mid-read):
		// every read ends (a stream collected mid-read never did).
		const crowd = async () => { const big = new Blob(Array.from({length: 24}, () => data)), piece = 4 << 20;
			const bufs = Array.from({length: 8}, () => new ArrayBuffer(piece)); let junk = [], n = 0, next = 0;
			const churn = setInterval(() => { junk = Array.from({length: 2e5}, (_, i) => ({i})) }, 5);
			const lane = async (i) => { while (next < big.size) { const o = next; next += piece; const r = await clefcheckReadBlob(big, o, o + piece, bufs[i]); bufs[i] = r.buf; n += r.n; } };
			const late = new Promise((r) => setTimeout(() => r(false), 20000));
			const ok = await Promise.race([Promise.all(Array.from({length: 8}, (_, i) => lane(i))).then(() => true), late]);
			clearInterval(churn);
			return {n, good: ok && n === big.size}; };
		// Into pieces (an Array of buffers, filled in order): the bytes
		// from off across them, each piece handed back in its place.
		const piecesOf = async (read, start, sizes) => { const into = sizes.map((n) => new ArrayBuffer(n)); try { const r = await read(into);
			if (!r.bufs) return {n: r.n, cap: r.buf.byteLength, good: good(r.buf, r.n, start), detached: into.some((b) => b.byteLength === 0), status: r.status || 0};
			const all = new Uint8Array(r.bufs.reduce((s, b) => s + b.byteLength, 0)); let at = 0; for (const b of r.bufs) { all.set(new Uint8Array(b), at); at += b.byteLength; }
			return {n: r.n, cap: r.bufs.length, detached: into.every((b) => b.byteLength === 0), good: r.bufs.every((b, i) => b.byteLength === sizes[i]) && good(all.buffer, r.n, start), status: r.status || 0};
		} catch (e) { return {error: String(e.message || e)} } };
		const pieces = (start, end, sizes) => piecesOf((into) => clefcheckReadBlob(blob, start, end, into), start, sizes);
		const rangePieces = (path, start, end, sizes) => piecesOf((into) => clefcheckFetchRange(path, start, end, "", undefined, 0, into), start, sizes);
		return JSON.stringify({
			pieces: await pieces(777, 777 + (5 << 19), [1 << 20, 1 << 20, 1 << 20]),
			piecesEnd: await pieces(data.length - 10, data.length + 100, [4, 1 << 20]),
			piecesSmall: await pieces(3, 3 + (5 << 19), [1 << 20, 1 << 20]),
			rangePieces: await rangePieces("/data", 1000, 1000 + (5 << 19) - 1, [1 << 20, 1 << 20, 1 << 20]),
			rangePiecesShort: await rangePieces("/short", 0, 99, [64, 64]),
			rangePiecesSmall: await rangePieces("/data", 3, 3 + (5 << 19) - 1, [1 << 20, 1 << 20]),
			range: await run((b) => clefcheckFetchRange("/data", 1000, 1000 + (2 << 20) - 1, "", undefined, 0, b), 1000),
			fetch: await run((b) => clefcheckFetch("/data", "GET", {Range: "bytes=5-" + (5 + (2 << 20) - 1)}, null, 8 << 20, undefined, 0, b), 5),
			long: await run((b) => clefcheckFetchRange("/long", 0, 99, "", undefined, 0, b), 0, 100),
			short: await run((b) => clefcheckFetchRange("/short", 0, 99, "", undefined, 0, b), 0),
			cut: await run((b) => clefcheckFetchRange("/cut", 0, (2 << 20) - 1, "", undefined, 0, b), 0),
			blob: await run((b) => clefcheckReadBlob(blob, 777, 777 + (2 << 20), b), 777),
			blobEnd: await run((b) => clefcheckReadBlob(blob, data.length - 10, data.length + 100, b), data.length - 10),
			blobNoBuffer: await run(() => clefcheckReadBlob(blob, 3, 3 + (1 << 20)), 3),
			notBytes: await run((b) => clefcheckReadInto(new ReadableStream({start(c) { c.enqueue(new Uint8Array(3)); c.close() }}), b, 3), 0),
			crowd: await crowd(),
		}) })()`
	s, err := eval[string](p, js, chromedp.EvalAwaitPromise)
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		N                          int
		More, Detached, Good, Null bool
		Cap, Status                int
		Error                      string
	}
	var got map[string]res
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	check := func(name string, ok bool, want string) {
		t.Helper()
		if !ok {
			t.Errorf("%s: %+v, want %s", name, got[name], want)
		}
	}
	r := got["range"]
	check("range", r.Status == 206 && r.N == 2<<20 && !r.More && r.Good && r.Detached && r.Cap == 4<<20, "206, 2 MiB of data's bytes from 1000 in the 4 MiB buffer given (transferred)")
	r = got["fetch"]
	check("fetch", r.Status == 206 && r.N == 2<<20 && !r.More && r.Good && r.Detached && r.Cap == 4<<20, "206, 2 MiB of data's bytes from 5, in the buffer given")
	r = got["long"]
	check("long", (r.N == 101 && r.Good) || strings.Contains(r.Error, "cut short"), "101 (one past the range: longer than asked), or refused")
	r = got["short"]
	check("short", r.N == 50 && !r.More && r.Good, "50 bytes (shorter than the range says)")
	r = got["cut"]
	// Whether the buffer given is detached after a cut is a race: a BYOB
	// read transfers it, but one issued after the stream has already
	// errored rejects without (the Streams spec's ReadableStreamBYOBReaderRead);
	// the callers take it back only if it still has its bytes (buffers.go).
	check("cut", r.Error != "" && strings.Contains(r.Error, "cut short"), "rejected as cut short")
	r = got["blob"]
	check("blob", r.N == 2<<20 && r.Good && r.Detached && r.Cap == 4<<20, "2 MiB of the Blob from 777, in the buffer given")
	r = got["blobEnd"]
	check("blobEnd", r.N == 10 && r.Good, "the 10 bytes left")
	r = got["pieces"]
	check("pieces", r.N == 5<<19 && r.Good && r.Detached && r.Cap == 3, "2.5 MiB of the Blob from 777 across the three 1 MiB pieces given, in order")
	r = got["piecesEnd"]
	check("piecesEnd", r.N == 10 && r.Good && r.Cap == 2, "the 10 bytes left: 4 in the first piece, 6 in the second")
	r = got["piecesSmall"]
	check("piecesSmall", r.N == 5<<19 && r.Good && r.Cap == 5<<19, "pieces too small for the span: its 2.5 MiB read into a buffer of its own")
	r = got["rangePieces"]
	check("rangePieces", r.Status == 206 && r.N == 5<<19 && r.Good && r.Detached && r.Cap == 3, "206, 2.5 MiB of data's bytes from 1000 across the three 1 MiB pieces given, in order")
	r = got["rangePiecesShort"]
	check("rangePiecesShort", r.Status == 206 && r.N == 50 && r.Good && r.Cap == 2, "the 50 bytes sent (shorter than the range says) in the first piece, both pieces handed back")
	r = got["rangePiecesSmall"]
	check("rangePiecesSmall", r.Status == 206 && r.N == 5<<19 && r.Good && !r.Detached && r.Cap == 5<<19, "pieces too small for the range: its 2.5 MiB read into a buffer of its own, the pieces untouched")
	r = got["blobNoBuffer"]
	check("blobNoBuffer", r.N == 1<<20 && r.Good && !r.Detached, "1 MiB read into a buffer of its own")
	r = got["crowd"]
	check("crowd", r.Good && r.N == 24*size, "all 72 MiB read within 20 s")
	r = got["notBytes"]
	check("notBytes", r.Null && !r.Detached, "null, the buffer untouched")
}
