package hub

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// DefaultEndpoint is the Hub's address unless HF_ENDPOINT (natively) or
// the page's endpoint setting says otherwise.
const DefaultEndpoint = "https://huggingface.co"

// Kind is what a source names.
type Kind string

// The kinds of source.
const (
	KindHub   Kind = "hub"   // a Hub repository (a folder or a file in it)
	KindURL   Kind = "url"   // an http(s) folder read by range
	KindLocal Kind = "local" // a local path
	KindDemo  Kind = "demo"  // the built-in demo world
)

// Ref is a parsed source.
type Ref struct {
	Kind     Kind   `json:"kind"`
	Endpoint string `json:"endpoint,omitempty"` // hub: scheme://host[/prefix], no trailing slash
	Repo     string `json:"repo,omitempty"`     // hub: owner/name
	Rev      string `json:"revision,omitempty"` // hub: the revision asked for ("main" by default)
	Path     string `json:"path,omitempty"`     // hub: a folder or file in the repository ("" is its root)
	// File: Path names a file (a /blob/ or /resolve/ URL), not a folder.
	File  bool   `json:"file,omitempty"`
	URL   string `json:"url,omitempty"`   // url: the folder's URL
	Local string `json:"local,omitempty"` // local: the path
}

// repoPart is what the Hub accepts in a repository's owner and name.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

// revPart is a branch, tag or commit as it can stand in a URL path (a
// branch with a slash must be given URL-escaped: refs%2Fpr%2F1).
var revPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._%+-]{0,199}$`)

// ErrNotRepo means a string does not have the form of a repository id.
var ErrNotRepo = errors.New("not a Hub repository id (owner/name)")

// ParseRepo reads owner/name[@rev][/path]; the part after the name is
// optional.
func ParseRepo(s string) (repo, rev, p string, err error) {
	owner, rest, ok := strings.Cut(s, "/")
	if !ok {
		return "", "", "", ErrNotRepo
	}
	name, rest, _ := strings.Cut(rest, "/")
	name, rev, hasRev := strings.Cut(name, "@")
	if !repoPart.MatchString(owner) || !repoPart.MatchString(name) || strings.Contains(owner+name, "..") {
		return "", "", "", ErrNotRepo
	}
	if hasRev && !revPart.MatchString(rev) {
		return "", "", "", fmt.Errorf("revision %q: letters, digits and . _ - %% + only (escape a slash as %%2F)", clip(rev))
	}
	if p, err = cleanPath(rest); err != nil {
		return "", "", "", err
	}
	return owner + "/" + name, rev, p, nil
}

// cleanPath checks a path inside a repository: relative, no "." or ".."
// segments, no backslashes.
func cleanPath(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, "\\\x00") {
			return "", fmt.Errorf("path %q inside the repository: no empty, '.' or '..' parts", clip(p))
		}
	}
	return p, nil
}

// NormalizeEndpoint checks an endpoint (https://huggingface.co, a mirror)
// and drops its trailing slash.
func NormalizeEndpoint(e string) (string, error) {
	if e == "" {
		return DefaultEndpoint, nil
	}
	u, err := url.Parse(strings.TrimSpace(e))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("endpoint %q: give the Hub's or a mirror's http(s) address, like %s", clip(e), DefaultEndpoint)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), nil
}

// Parse reads a source as a user may type it. endpoint is the Hub's
// address ("" is DefaultEndpoint); an http(s) URL on the endpoint's host
// (or on huggingface.co) whose path is a Hub page — /owner/name,
// /owner/name/tree/rev/path, /owner/name/blob/rev/file,
// /owner/name/resolve/rev/file — is that repository. local says whether a
// string may be a local path (natively: the caller checks that it exists
// first, since owner/name is also a relative path).
func Parse(s, endpoint string) (Ref, error) {
	s = strings.TrimSpace(s)
	ep, err := NormalizeEndpoint(endpoint)
	if err != nil {
		return Ref{}, err
	}
	switch {
	case s == "":
		return Ref{}, errors.New("no source given")
	case s == "demo":
		return Ref{Kind: KindDemo}, nil
	case strings.HasPrefix(s, "hf://"):
		rest := strings.TrimPrefix(s, "hf://")
		rest = strings.TrimPrefix(rest, "models/")
		repo, rev, p, err := ParseRepo(rest)
		if err != nil {
			return Ref{}, fmt.Errorf("%s: %w", clip(s), err)
		}
		return hubRef(ep, repo, rev, p, false), nil
	case strings.HasPrefix(s, "file://"):
		u, err := url.Parse(s)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			return Ref{}, fmt.Errorf("%s: a file URL names a local path (file:///path)", clip(s))
		}
		return Ref{Kind: KindLocal, Local: u.Path}, nil
	case strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"):
		return parseURL(s, ep)
	}
	if repo, rev, p, err := ParseRepo(s); err == nil {
		return hubRef(ep, repo, rev, p, false), nil
	}
	return Ref{Kind: KindLocal, Local: s}, nil
}

func hubRef(ep, repo, rev, p string, file bool) Ref {
	if rev == "" {
		rev = "main"
	}
	file = file || looksLikeFile(p)
	return Ref{Kind: KindHub, Endpoint: ep, Repo: repo, Rev: rev, Path: p, File: file}
}

// parseURL tells a Hub page from any other folder URL.
func parseURL(s, ep string) (Ref, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return Ref{}, fmt.Errorf("%s is not a URL", clip(s))
	}
	epu, _ := url.Parse(ep)
	prefix := strings.TrimRight(epu.EscapedPath(), "/")
	onHub := (u.Host == epu.Host && strings.HasPrefix(u.EscapedPath(), prefix+"/")) || u.Host == "huggingface.co"
	if onHub {
		hubEP := ep
		if u.Host == "huggingface.co" && epu.Host != "huggingface.co" {
			hubEP, prefix = DefaultEndpoint, ""
		}
		rest := strings.TrimPrefix(u.EscapedPath(), prefix+"/")
		parts := strings.Split(strings.Trim(rest, "/"), "/")
		if len(parts) > 0 && parts[0] == "models" {
			parts = parts[1:]
		}
		if len(parts) >= 2 && repoPart.MatchString(parts[0]) && repoPart.MatchString(parts[1]) && parts[0] != "api" {
			repo := parts[0] + "/" + parts[1]
			switch {
			case len(parts) == 2:
				return hubRef(hubEP, repo, "", "", false), nil
			case len(parts) >= 4 && (parts[2] == "tree" || parts[2] == "blob" || parts[2] == "resolve"):
				rev, err := url.PathUnescape(parts[3])
				if err != nil || !revPart.MatchString(url.PathEscape(rev)) {
					return Ref{}, fmt.Errorf("%s: revision %q", clip(s), clip(parts[3]))
				}
				p, err := cleanPath(strings.Join(parts[4:], "/"))
				if err != nil {
					return Ref{}, err
				}
				file := parts[2] != "tree"
				if file && p == "" {
					return Ref{}, fmt.Errorf("%s names no file", clip(s))
				}
				return hubRef(hubEP, repo, url.PathEscape(rev), p, file), nil
			}
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Ref{}, fmt.Errorf("%s: a folder URL has no query or fragment (a signed URL names one file, not a folder)", clip(s))
	}
	return Ref{Kind: KindURL, URL: s}, nil
}

// looksLikeFile tells a path naming a file (by its extension: a
// checkpoint, a config, a records or report file) from a folder's.
func looksLikeFile(p string) bool {
	switch path.Ext(p) {
	case ".safetensors", ".json", ".jsonl", ".md", ".txt":
		return true
	}
	return false
}

// String is the source as the reports name it.
func (r Ref) String() string {
	switch r.Kind {
	case KindHub:
		s := "hf://" + r.Repo + "@" + r.Rev
		if r.Path != "" {
			s += "/" + r.Path
		}
		if r.Endpoint != DefaultEndpoint {
			s += " (" + r.Endpoint + ")"
		}
		return s
	case KindURL:
		return r.URL
	case KindLocal:
		return r.Local
	}
	return string(r.Kind)
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
