// Package msg is the message protocol between clefcheck's page (app.wasm)
// and its Web Workers (engine.wasm, started by public/worker.js): one
// typed struct per message, each with Value (the object to postMessage)
// and an XxxOf function (the struct from a received event's data). Every
// message is a plain object whose "op" field names it; the other fields
// are below, spelled as they are on the wire. browser.Engine (the page)
// and package worker (engine.wasm) use only these types, and the test
// checks public/worker.js and this list against the Op constants.
//
// There are three parties. The page runs every job in one long-lived
// engine worker; the engine worker, for an audit, starts a pool of
// workers (nested, the same engine.wasm) and deals the pairs out to them
// (the dealer). Every engine.wasm worker answers both kinds of message.
//
// Page → engine worker:
//
//	{op: "job", id, spec, files}    Job: run spec (a jobs.Spec as JSON) as job
//	                                id (a number); files maps the spec's
//	                                "files" inputs to a FileList or [File]
//	{op: "cancel", id}              Cancel: cancel job id
//	{op: "stacks", why}             Stacks: write every goroutine's stack to
//	                                the console, on one line, with why (the
//	                                page's watchdog, before it stops a worker
//	                                whose job got no answer in its time)
//
// Engine worker → page:
//
//	{op: "event", id, json}         Event: a jobs.Event of job id, as JSON
//	{op: "done", id, json, arrays, arrayLens}
//	                                Done: job id's jobs.Output, as JSON (last);
//	                                arrays (optional, a Float64Array cut at
//	                                arrayLens, [number]) are what
//	                                jobs.TakeArrays took from it (a
//	                                deep audit's σ), put back by the page
//	{op: "fail", id, msg}           Fail: job id failed with msg (last)
//
// Dealer (an engine worker) → pool worker:
//
//	{op: "module", module}          Module: first, always: the dealer's own
//	                                compiled engine.wasm (a
//	                                WebAssembly.Module; undefined if it has
//	                                none), which the pool worker (its URL
//	                                ends #pool) waits for and instantiates
//	                                instead of fetching and compiling its
//	                                own: V8 shares the compiled code, and
//	                                what the dealer has already optimized,
//	                                between them. worker.js reads it, Go
//	                                never does
//	{op: "open", dir, spec, url, token, heads}
//	{op: "open", dir, spec, files, names}
//	                                Open: open the adapter in folder dir of a
//	                                base URL (token optional) or of the Files
//	                                (an array of File, with their paths in
//	                                names); spec is a worker.AuditSpec as JSON;
//	                                heads (optional, with url): [{name, size,
//	                                etag, bytes: Uint8Array}], what the
//	                                dealer's probes of the files learnt
//	                                (source.Head), which the pool worker
//	                                opens them with instead of asking the
//	                                server again
//	{op: "piece", buf, file, offset, at, len, total}
//	                                Piece: bytes [offset+at, offset+at+len)
//	                                of file, the first len of buf
//	                                (transferred), part of the span [offset,
//	                                offset+total) the next pairs checks; a
//	                                span's pieces come in order, right before
//	                                it (at most msg.PieceBytes each: why, there)
//	{op: "pairs", modules, refs, refLens, buf, pieces, len, file, offset}
//	                                Pairs: check these modules ([string],
//	                                neighbours in the file) in order; buf,
//	                                when present, is an ArrayBuffer
//	                                (transferred) whose first len bytes (all,
//	                                without len) are bytes [offset,
//	                                offset+len) of file, read ahead by the
//	                                dealer; pieces, instead of buf: those
//	                                bytes came in that many pieces just
//	                                before; refs (a Float64Array) cut at
//	                                refLens ([number], one per module) are
//	                                the extraction report's σ of each
//	                                (audit.Job.Ref: the pool worker reads
//	                                no report of its own)
//
// Pool worker → dealer:
//
//	{op: "opened", kernel}          Opened: the adapter is open; kernel is
//	                                the session's (audit.Session.Kernel)
//	{op: "figures", module, json, retries}
//	                                Figures: one pair's audit.Figures, as JSON;
//	                                retries counts the worker's range reads
//	                                retried so far
//	{op: "spent", buf, file, offset, len}
//	                                Spent: a span's (or piece's) buf, copied,
//	                                handed back (transferred) for the dealer
//	                                to fill again; it held bytes [offset,
//	                                offset+len) of file
//
// Any engine.wasm worker → whoever started it:
//
//	{op: "ready", simd_error}       Ready: Go runs and listens; simd_error says
//	                                why the SIMD kernels are not in use ("" if
//	                                they are). Messages posted before it are
//	                                queued by worker.js, not lost.
//	{op: "error", msg, class}       Error: the worker cannot go on: engine.wasm
//	                                did not load (posted by worker.js), or a
//	                                pool worker's open or pairs failed; the
//	                                page fails its pending jobs, the dealer
//	                                stops every pool worker; class (optional)
//	                                is why in a word: missing, refused, cors,
//	                                unreachable, changed (url-changed: a URL), cancelled
package msg
