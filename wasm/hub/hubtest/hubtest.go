// Package hubtest is a Hugging Face Hub simulator for tests, on loopback:
// the API (revision → commit and siblings, the recursive tree listing with
// LFS digests, paginated), /resolve/ answering small files directly and
// redirecting LFS files (302) to a CDN on another origin with signed URLs
// that expire, the headers the Hub sends (X-Repo-Commit, X-Linked-Size,
// X-Linked-Etag), gzipped JSON without Content-Length, gated repositories
// (401 without a token, GatedRepo), branches that can be moved, listed
// digests that can be falsified, faults (faults.go: a fraction FaultRate of
// the requests for bytes, at /resolve/ and at the CDN, cut mid-body, reset,
// or answered 503 or 429 with a Retry-After, reproducibly from Seed) and a
// hook to inject one's own at the CDN. It counts what it answered (Stats)
// and whether a token ever reached the CDN. Everything answers CORS for
// any origin, as the Hub does, so the browser tests use it too.
//
//	h := hubtest.New()
//	defer h.Close()
//	h.FaultRate, h.Seed = 0.2, 1
//	commit, _ := h.Add("org/adapter", "main", dir, "")
//	src, _ := source.NewHTTP(h.Base("org/adapter", "main"))
package hubtest

import (
	"compress/gzip"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LFSThreshold: files at least this large, and every *.safetensors, are
// LFS files (redirected to the CDN), as the Hub stores them.
const LFSThreshold = 10 << 20

// Hub is a running simulator: Endpoint for the API and /resolve/, CDN for
// the large files.
type Hub struct {
	Endpoint string
	api, cdn *httptest.Server
	// URLTTL is how long a signed CDN URL stays valid (default 1 h).
	URLTTL time.Duration
	// PageSize paginates the tree listing (0: one page).
	PageSize int
	// Fault, when set, may answer a CDN request itself (a cut, a reset, a
	// 503): it returns true when it did.
	Fault func(w http.ResponseWriter, r *http.Request) bool
	// FaultRate is the fraction of /resolve/ and CDN requests faulted (0:
	// none), with Faults picked from evenly (none: AllFaults), from Seed;
	// RetryAfter is what 503 and 429 say (default 1 s; whole seconds).
	FaultRate  float64
	Faults     []Fault
	Seed       uint64
	RetryAfter time.Duration

	mu        sync.Mutex
	st        Stats
	rnd       *rand.Rand
	faultsOff bool
	repos     map[string]*repo
	blobs     map[string]string // SHA-256 → the file's path, for the CDN
	secret    []byte
	tokenAt   atomic.Int64 // CDN requests that carried an Authorization header
	cdnHits   atomic.Int64
}

type repo struct {
	token    string            // "": public; else the token that reads it (gated)
	branches map[string]string // name → commit
	commits  map[string]*commit
}

type commit struct {
	dir   string
	files map[string]*file // path → file
}

type file struct {
	size   int64
	sha256 string // hex
	oid    string // git blob id
	lfs    bool
	listed string // the SHA-256 the listing claims (falsified by SetListedSHA256)
}

// New starts a simulator; Close stops it.
func New() *Hub {
	h := &Hub{repos: map[string]*repo{}, blobs: map[string]string{}, secret: []byte("hubtest-secret"), URLTTL: time.Hour}
	h.api = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.Endpoint = h.api.URL
	return h
}

// Close stops the servers.
func (h *Hub) Close() {
	h.api.CloseClientConnections()
	h.cdn.CloseClientConnections()
	h.api.Close()
	h.cdn.Close()
}

// Base is the resolve URL of repository id's root at rev (a branch or a
// commit), with a trailing slash: what source.NewHTTP takes.
func (h *Hub) Base(id, rev string) string { return h.Endpoint + "/" + id + "/resolve/" + rev + "/" }

// TokenReachedCDN counts the CDN requests that carried a token.
func (h *Hub) TokenReachedCDN() int64 { return h.tokenAt.Load() }

// CDNRequests counts the CDN's requests.
func (h *Hub) CDNRequests() int64 { return h.cdnHits.Load() }

// Add publishes the folder dir as repository id at a new commit on
// branch (created or moved), gated behind token if token is not "". It
// returns the commit.
func (h *Hub) Add(id, branch, dir, token string) (string, error) {
	c := &commit{dir: dir, files: map[string]*file{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, err := describe(p)
		if err != nil {
			return err
		}
		f.lfs = f.size >= LFSThreshold || strings.HasSuffix(rel, ".safetensors")
		c.files[filepath.ToSlash(rel)] = f
		return nil
	})
	if err != nil {
		return "", err
	}
	sum := sha1.New()
	names := make([]string, 0, len(c.files))
	for n := range c.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(sum, "%s %s\n", n, c.files[n].sha256)
	}
	fmt.Fprintf(sum, "%s %d", id, time.Now().UnixNano())
	sha := hex.EncodeToString(sum.Sum(nil))
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[id]
	if r == nil {
		r = &repo{branches: map[string]string{}, commits: map[string]*commit{}}
		h.repos[id] = r
	}
	r.token = token
	r.commits[sha] = c
	r.branches[branch] = sha
	return sha, nil
}

// SetListedSHA256 makes the listing claim a different SHA-256 for a file
// (at the commit branch points to): the bytes no longer match it.
func (h *Hub) SetListedSHA256(id, branch, p, sha string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.repos[id]
	r.commits[r.branches[branch]].files[p].listed = sha
}

func describe(p string) (*file, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	s2, s1 := sha256.New(), sha1.New()
	fmt.Fprintf(s1, "blob %d\x00", st.Size())
	if _, err := io.Copy(io.MultiWriter(s2, s1), fh); err != nil {
		return nil, err
	}
	return &file{size: st.Size(), sha256: hex.EncodeToString(s2.Sum(nil)), oid: hex.EncodeToString(s1.Sum(nil))}, nil
}

// lookup finds a repository's commit for rev (a branch or a commit).
func (h *Hub) lookup(w http.ResponseWriter, r *http.Request, id, rev string) (*repo, string, *commit, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp := h.repos[id]
	if rp == nil {
		hubError(w, 401, "RepoNotFound", "Repository not found")
		return nil, "", nil, false
	}
	if rp.token != "" && r.Header.Get("Authorization") != "Bearer "+rp.token {
		hubError(w, 401, "GatedRepo", "Access to this repository is restricted")
		return nil, "", nil, false
	}
	sha := rev
	if b, ok := rp.branches[rev]; ok {
		sha = b
	}
	c := rp.commits[sha]
	if c == nil {
		hubError(w, 404, "RevisionNotFound", "Invalid rev id: "+rev)
		return nil, "", nil, false
	}
	return rp, sha, c, true
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	// The Hub's errors carry CORS too (huggingface.js reads them in the
	// browser): a page can tell a refusal from an unreachable host.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Expose-Headers", "X-Error-Code, X-Error-Message")
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q}`, msg)
}

// writeJSON answers gzipped JSON with no Content-Length, as a CDN-fronted
// API does.
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Expose-Headers", "Link, X-Error-Code, X-Error-Message")
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		json.NewEncoder(zw).Encode(v)
		zw.Close()
		return
	}
	json.NewEncoder(w).Encode(v)
}

func (h *Hub) serveAPI(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Range")
		w.WriteHeader(204)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "revision":
		h.revision(w, r, parts[2]+"/"+parts[3], strings.Join(parts[5:], "/"))
	case len(parts) >= 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "tree":
		h.tree(w, r, parts[2]+"/"+parts[3], parts[5], strings.Join(parts[6:], "/"))
	case len(parts) >= 5 && parts[2] == "resolve":
		h.resolve(w, r, parts[0]+"/"+parts[1], parts[3], strings.Join(parts[4:], "/"))
	default:
		hubError(w, 404, "EntryNotFound", "no such page")
	}
}

func (h *Hub) revision(w http.ResponseWriter, r *http.Request, id, rev string) {
	_, sha, c, ok := h.lookup(w, r, id, rev)
	if !ok {
		return
	}
	type lfs struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	}
	type sib struct {
		RFilename string `json:"rfilename"`
		Size      int64  `json:"size"`
		LFS       *lfs   `json:"lfs,omitempty"`
	}
	var sibs []sib
	for _, n := range sorted(c.files) {
		f := c.files[n]
		s := sib{RFilename: n, Size: f.size}
		if f.lfs {
			s.LFS = &lfs{SHA256: f.listedSHA(), Size: f.size}
		}
		sibs = append(sibs, s)
	}
	writeJSON(w, r, map[string]any{"id": id, "sha": sha, "siblings": sibs})
}

func (f *file) listedSHA() string {
	if f.listed != "" {
		return f.listed
	}
	return f.sha256
}

func sorted(m map[string]*file) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (h *Hub) tree(w http.ResponseWriter, r *http.Request, id, rev, dir string) {
	_, _, c, ok := h.lookup(w, r, id, rev)
	if !ok {
		return
	}
	type lfs struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	}
	type entry struct {
		Type string `json:"type"`
		Path string `json:"path"`
		Size int64  `json:"size"`
		OID  string `json:"oid"`
		LFS  *lfs   `json:"lfs,omitempty"`
	}
	var es []entry
	dirs := map[string]bool{}
	for _, n := range sorted(c.files) {
		if dir != "" && !strings.HasPrefix(n, dir+"/") {
			continue
		}
		for d := path.Dir(n); d != "." && d != dir && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			es = append(es, entry{Type: "directory", Path: d, OID: "0"})
		}
		f := c.files[n]
		e := entry{Type: "file", Path: n, Size: f.size, OID: f.oid}
		if f.lfs {
			e.LFS = &lfs{OID: f.listedSHA(), Size: f.size}
		}
		es = append(es, e)
	}
	if es == nil && dir != "" {
		hubError(w, 404, "EntryNotFound", dir+" does not exist")
		return
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	if h.PageSize > 0 && start+h.PageSize < len(es) {
		q := r.URL.Query()
		q.Set("cursor", strconv.Itoa(start+h.PageSize))
		next := *r.URL
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, h.Endpoint, next.RequestURI()))
		es = es[start : start+h.PageSize]
	} else if start > 0 {
		es = es[min(start, len(es)):]
	}
	writeJSON(w, r, es)
}

func (h *Hub) resolve(w http.ResponseWriter, r *http.Request, id, rev, p string) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Expose-Headers", "X-Repo-Commit, X-Linked-Size, X-Linked-Etag, Content-Range, Content-Length, ETag, Retry-After, X-Error-Code")
	h.mu.Lock()
	var f *file
	local := ""
	if rp := h.repos[id]; rp != nil {
		sha := rev
		if b, ok := rp.branches[rev]; ok {
			sha = b
		}
		if c := rp.commits[sha]; c != nil {
			if f = c.files[p]; f != nil {
				local = filepath.Join(c.dir, filepath.FromSlash(p))
			}
		}
	}
	h.mu.Unlock()
	fault, faulted := h.count(func(s *Stats) {
		switch {
		case f == nil:
			s.Missing++
		case f.lfs:
			s.Redirects++
		}
	})
	if faulted {
		h.fault(w, r, fault, local)
		return
	}
	_, sha, c, ok := h.lookup(w, r, id, rev)
	if !ok {
		return
	}
	if f = c.files[p]; f == nil {
		hubError(w, 404, "EntryNotFound", p+" does not exist")
		return
	}
	w.Header().Set("X-Repo-Commit", sha)
	if !f.lfs {
		w.Header().Set("ETag", `"`+f.oid+`"`)
		http.ServeFile(w, r, filepath.Join(c.dir, filepath.FromSlash(p)))
		return
	}
	w.Header().Set("X-Linked-Size", strconv.FormatInt(f.size, 10))
	w.Header().Set("X-Linked-Etag", `"`+f.sha256+`"`)
	exp := time.Now().Add(h.URLTTL).UnixMilli()
	target := fmt.Sprintf("/%s/%s?Expires=%d&Signature=%s", strings.ReplaceAll(id, "/", "--"), f.sha256, exp, h.sign(id, exp))
	h.mu.Lock()
	h.blobs[f.sha256] = filepath.Join(c.dir, filepath.FromSlash(p))
	h.mu.Unlock()
	http.Redirect(w, r, h.cdn.URL+target, http.StatusFound)
}

func (h *Hub) sign(id string, exp int64) string {
	m := hmac.New(sha256.New, h.secret)
	fmt.Fprintf(m, "%s|%d", id, exp)
	return hex.EncodeToString(m.Sum(nil))[:32]
}

func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.cdnHits.Add(1)
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Expose-Headers", "Content-Range, Content-Length, Accept-Ranges, ETag, Retry-After")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Headers", "Range")
		w.WriteHeader(204)
		return
	}
	leak := r.Header.Get("Authorization") != ""
	if leak {
		h.tokenAt.Add(1)
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	id := strings.ReplaceAll(parts[0], "--", "/")
	exp, _ := strconv.ParseInt(r.URL.Query().Get("Expires"), 10, 64) // Unix ms
	good := r.URL.Query().Get("Signature") == h.sign(id, exp)
	expired := good && time.Now().UnixMilli() >= exp
	h.mu.Lock()
	p := h.blobs[parts[1]]
	h.mu.Unlock()
	fault, faulted := h.count(func(s *Stats) {
		if leak {
			s.Leaks++
		}
		if expired {
			s.Expired++
		}
	})
	if faulted {
		h.fault(w, r, fault, p)
		return
	}
	if !good {
		http.Error(w, "<Error><Code>AccessDenied</Code></Error>", http.StatusForbidden)
		return
	}
	if expired {
		http.Error(w, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>", http.StatusForbidden)
		return
	}
	if h.Fault != nil && h.Fault(w, r) {
		return
	}
	if p == "" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", `"`+parts[1]+`"`)
	http.ServeFile(w, r, p)
}
