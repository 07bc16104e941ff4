// Package safetensors reads the safetensors format strictly and by range.
//
// A file is 8 bytes of little-endian u64 N, N bytes of UTF-8 JSON (the
// header), then the data buffer. The header maps tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// buffer) plus an optional "__metadata__" object of string values.
//
// The reader enforces what the reference implementation enforces — the header
// size cap (checked before anything is allocated), UTF-8, a JSON object,
// shape × dtype size equal to the byte length (with overflow checks), offsets
// contiguous from 0 with no gap and no overlap, the buffer exactly covered (a
// trailing byte would make the file a polyglot) — and what it misses:
// duplicate tensor names (parsed at the token level, so the last one cannot
// silently win), non-string metadata values, missing or extra fields,
// negative or fractional numbers. Every violation is an *Error naming its
// subject (the file or the tensor) and wrapping a sentinel, as archive/zip
// does: ErrHeader for a malformed header or index, ErrLayout for tensors
// that do not tile the buffer (or shards that disagree with their index),
// ErrTruncated for a file that ends early or cannot be read, ErrNoTensor
// for a name that is not there; a file that cannot be opened wraps the
// file system's error (fs.ErrNotExist, …). Where one file breaks several
// rules (the layout checks, a sharded checkpoint), the error is an Errors
// list holding all of them. The package knows nothing of findings: the
// audit maps the sentinels to finding codes (package audit/findings).
//
// NewReader reads only the header. Tensors are read by byte range into the
// caller's buffer, so a 1.4 GB file is never held in memory whole, whatever the
// io.ReaderAt behind it: a local file, a browser File, or an HTTP URL read with
// Range requests.
//
// # Hostile files
//
// The header is streamed through the JSON decoder, never held whole: its
// whitespace folded (100 MB of padding costs nothing), its UTF-8 checked
// on the way, no string longer than MaxHeaderString. A header or an index
// listing more than MaxTensors tensors (per file, and all shards
// together), an index naming more than MaxShards shards, a tensor name
// longer than MaxNameLen are refused with ErrLimit before anything is
// allocated for what lies beyond. A header length beyond the file is
// reported with the file's size, never the length itself (a text file read
// as safetensors would have its first eight bytes quoted back). At most
// 100 violations of one file or checkpoint are listed; the rest are
// counted.
package safetensors
