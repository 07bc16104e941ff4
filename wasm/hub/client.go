package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/fetch"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// Limits on what the API may send: a listing is metadata, not a data set.
const (
	MaxListingBytes = 32 << 20 // one API response
	MaxFiles        = 100000   // files under the folder audited
	maxPages        = 200      // pages of a paginated tree listing
)

// Client talks to a Hub endpoint's API.
type Client struct {
	Endpoint string     // "" is DefaultEndpoint
	Token    string     // sent to the endpoint's host only
	Doer     fetch.Doer // nil: fetch.Default
}

// File is a file of a repository at a commit.
type File struct {
	Path string `json:"path"` // from the repository's root
	Size int64  `json:"size"`
	// SHA256 is the Hub's digest of an LFS file (lfs.oid), "" for a file
	// kept in git (whose git blob id is OID).
	SHA256 string `json:"sha256,omitempty"`
	OID    string `json:"oid,omitempty"`
}

// Snapshot is a folder of a repository at one commit, with its files.
type Snapshot struct {
	Ref    Ref    `json:"source"`
	Commit string `json:"commit"`
	Files  []File `json:"files"` // under Ref.Path, sorted by path
}

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Resolve turns the revision to a commit and lists the folder's files at
// that commit (a Ref naming a file lists that file's folder).
func (c *Client) Resolve(ctx context.Context, ref Ref) (*Snapshot, error) {
	if ref.Kind != KindHub {
		return nil, fmt.Errorf("hub: %s is not a Hub repository", ref)
	}
	ep, err := NormalizeEndpoint(firstOf(ref.Endpoint, c.Endpoint))
	if err != nil {
		return nil, err
	}
	ref.Endpoint = ep
	folder := ref.Path
	if ref.File {
		folder = path.Dir(ref.Path)
		if folder == "." {
			folder = ""
		}
	}
	snap := &Snapshot{Ref: ref}
	var rev struct {
		SHA string `json:"sha"`
	}
	if err := c.getJSON(ctx, ep, fmt.Sprintf("/api/models/%s/revision/%s", ref.Repo, ref.Rev), &rev, nil); err != nil {
		return nil, err
	}
	if !commitRE.MatchString(rev.SHA) {
		return nil, fmt.Errorf("hub: the revision %s of %s resolved to %q, not a commit", ref.Rev, ref.Repo, clip(rev.SHA))
	}
	snap.Commit = rev.SHA
	files, err := c.tree(ctx, ep, ref.Repo, snap.Commit, folder)
	if err != nil {
		return nil, err
	}
	if ref.File {
		var one []File
		for _, f := range files {
			if f.Path == ref.Path {
				one = append(one, f)
			}
		}
		if len(one) == 0 {
			return nil, fmt.Errorf("hub: %s has no file %s at %s: %w", ref.Repo, ref.Path, short(snap.Commit), report.ErrMissing)
		}
	}
	snap.Files = files
	return snap, nil
}

// tree lists every file under folder at commit, following the pages.
func (c *Client) tree(ctx context.Context, ep, repo, commit, folder string) ([]File, error) {
	type entry struct {
		Type string `json:"type"`
		Path string `json:"path"`
		Size int64  `json:"size"`
		OID  string `json:"oid"`
		LFS  *struct {
			OID  string `json:"oid"`
			Size int64  `json:"size"`
		} `json:"lfs"`
	}
	next := fmt.Sprintf("/api/models/%s/tree/%s", repo, commit)
	if folder != "" {
		next += "/" + escapePath(folder)
	}
	next += "?recursive=true"
	var out []File
	for page := 0; next != ""; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("hub: the listing of %s has more than %d pages", repo, maxPages)
		}
		var es []entry
		var link string
		if err := c.getJSON(ctx, ep, next, &es, &link); err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.Type != "file" {
				continue
			}
			p, err := cleanPath(e.Path)
			if err != nil || p == "" || (folder != "" && !strings.HasPrefix(p, folder+"/")) {
				return nil, fmt.Errorf("hub: the listing names %q, outside %s", clip(e.Path), folder)
			}
			f := File{Path: p, Size: e.Size, OID: e.OID}
			if e.LFS != nil {
				f.SHA256, f.Size = strings.ToLower(e.LFS.OID), e.LFS.Size
			}
			if f.Size < 0 {
				return nil, fmt.Errorf("hub: the listing gives %s a size of %d", p, f.Size)
			}
			out = append(out, f)
			if len(out) > MaxFiles {
				return nil, fmt.Errorf("hub: more than %d files under %s", MaxFiles, firstOf(folder, "the repository's root"))
			}
		}
		next = nextLink(link, ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	for i := 1; i < len(out); i++ {
		if out[i].Path == out[i-1].Path {
			return nil, fmt.Errorf("hub: the listing names %s twice", out[i].Path)
		}
	}
	return out, nil
}

// getJSON GETs an API path of the endpoint into v; link receives the Link
// header (pagination).
func (c *Client) getJSON(ctx context.Context, ep, p string, v any, link *string) error {
	hdr := map[string]string{"Accept": "application/json"}
	if c.Token != "" {
		hdr["Authorization"] = "Bearer " + c.Token // the endpoint's own host
	}
	u := p
	if !strings.HasPrefix(p, "http://") && !strings.HasPrefix(p, "https://") {
		u = ep + p
	}
	resp, err := fetch.Or(c.Doer).Do(ctx, &fetch.Request{URL: u, Header: hdr, Limit: MaxListingBytes + 1})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("hub: %s: %v: %w", redact(u), err, report.ErrUnreachable)
	}
	if err := statusError(resp, u); err != nil {
		return err
	}
	if resp.Truncated {
		return fmt.Errorf("hub: %s sent more than %d bytes", redact(u), MaxListingBytes)
	}
	if link != nil {
		*link = resp.Get("Link")
	}
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return fmt.Errorf("hub: %s did not answer the Hub API's JSON (is %s a Hub endpoint?): %v", redact(u), ep, err)
	}
	return nil
}

// statusError classifies an API answer that is not 200.
func statusError(resp *fetch.Response, u string) error {
	code := resp.Get("X-Error-Code")
	msg := resp.Get("X-Error-Message")
	detail := ""
	if code != "" || msg != "" {
		detail = fmt.Sprintf(" (%s %s)", code, clip(msg))
	}
	switch {
	case resp.Status == 200:
		return nil
	case resp.Status == 401 && code == "RepoNotFound":
		return fmt.Errorf("hub: %s: HTTP 401%s: the repository does not exist, or it is private — with a token that can read it, it would be found: %w", redact(u), detail, report.ErrRefused)
	case resp.Status == 401 || resp.Status == 403:
		return fmt.Errorf("hub: %s: HTTP %d%s: the repository is gated or private — request access on its page, then give a token: %w", redact(u), resp.Status, detail, report.ErrRefused)
	case resp.Status == 404:
		return fmt.Errorf("hub: %s: HTTP 404%s: no such repository, revision or path: %w", redact(u), detail, report.ErrMissing)
	case resp.Status == 429 || resp.Status >= 500:
		return fmt.Errorf("hub: %s: HTTP %d%s: %w", redact(u), resp.Status, detail, report.ErrUnreachable)
	}
	return fmt.Errorf("hub: %s: HTTP %d%s", redact(u), resp.Status, detail)
}

// nextLink reads the rel="next" URL of a Link header, if it stays on the
// endpoint.
func nextLink(link, ep string) string {
	for _, part := range strings.Split(link, ",") {
		u, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		u = strings.Trim(strings.TrimSpace(u), "<>")
		if strings.HasPrefix(u, ep+"/") {
			return u
		}
	}
	return ""
}

// escapePath escapes each segment of a repository path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// redact drops a URL's query string unless it is the listing's own (a
// signed URL's query is a secret).
func redact(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 && u[i:] != "?recursive=true" {
		return u[:i] + "?…"
	}
	return u
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
