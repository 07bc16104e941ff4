// Package source opens files for the engine through io/fs, as io.ReaderAt:
// a local directory natively (Dir), and range-read files anywhere: nothing
// here reads a whole file.
//
// RangeFS is the one range-read file system: an fs.FS (and fs.StatFS) over
// a Ranger, a backend that learns a file's size (Probe) and reads a range
// into a buffer (ReadRange), optionally a Lister (then folders open too).
// It holds the caching policies in one place: the first bytes Open read
// (FirstChunk), the spans handed over by Preload (Spans: one per file, the
// last handed over, used only for reads wholly inside), a read-ahead
// window per open file (ReadAhead) and small-read chunks (Chunk, at most
// eight per open file, the oldest dropped first). Two backends use it:
//
//   - HTTP (http.go): a base URL whose files are read with HTTP Range
//     requests through fetch.Doer (net/http natively, the page's fetch()
//     in the browser); Open costs one request for the size and the first
//     64 kB, small reads go through 1 MB chunks. Every request is retried
//     as its Retry policy says (retry.go; the loop, the redirects to a
//     CDN and the classification of errors are in httpread.go), and
//     ReadWith runs the same loop over another Sender. Given a Cache
//     (cache.go; httpcache.go says what is kept, under which key), it
//     reads through it: the browser's engine worker keeps what it reads
//     in the Origin Private File System. wasm/hub/hubtest serves files as
//     the Hub does, with faults.
//   - browser.Files (wasm/browser): the user's files, read with
//     File.slice(a, b).arrayBuffer(), each read as asked.
//
// Open, ReadSmall and Exists are what the engine's readers call, with
// errors coded file.unreadable (wasm/report).
package source
