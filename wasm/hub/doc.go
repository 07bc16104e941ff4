// Package hub reads a repository of the Hugging Face Hub (or a mirror) the
// way the Hub serves it, for every front end: it parses what a user may
// type for a source — owner/name, owner/name@rev, hf://owner/name@rev/path,
// a Hub page URL (/owner/name, /tree/rev/path, /blob/rev/file,
// /resolve/rev/file), any other http(s) URL, a local path, the demo — into
// one Ref; it resolves a revision to one commit through the Hub's API
// (GET {endpoint}/api/models/{repo}/revision/{rev}, falling back to the
// X-Repo-Commit header of a resolve response) and lists the files under a
// folder with their sizes and, for LFS files, their SHA-256
// (GET {endpoint}/api/models/{repo}/tree/{commit}/{path}?recursive=true);
// and it opens the folder as an fs.FS whose every read goes to
// {endpoint}/{repo}/resolve/{commit}/…, so a branch that moves during an
// audit cannot mix two versions. Shards come from the listing, never from
// guessed names.
//
// A token is sent to the endpoint's host only (the API and resolve
// requests); a resolve answered with a redirect to a CDN on another host
// is followed without it (the fetch layer's rule). 401 and 403 become
// report.ErrRefused, 404 report.ErrMissing, so the check ends with verdict
// error and says what to do.
package hub
