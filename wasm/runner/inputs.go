package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/hub"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// resolveTimeout bounds the Hub API calls that turn a revision into a
// commit and list its files.
const resolveTimeout = 2 * time.Minute

// OpenURL opens a URL input, natively and in the browser alike: a Hub
// source (hf://owner/name@rev/path, or a Hub page URL on the input's
// endpoint) through the Hub's API, pinned to one commit (hub.FS); any other
// http(s) folder by range (source.HTTP). The token goes with it (to the
// source's own host only).
func OpenURL(in *jobs.Input) (fs.FS, error) {
	ref, err := hub.Parse(in.URL, in.Endpoint)
	if err != nil {
		return nil, err
	}
	switch ref.Kind {
	case hub.KindHub:
		ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
		defer cancel()
		snap, err := (&hub.Client{Endpoint: ref.Endpoint, Token: in.Token}).Resolve(ctx, ref)
		if err != nil {
			return nil, err
		}
		h, err := snap.FS(in.Token)
		if err != nil || !ref.File {
			return h, err
		}
		return onlyFS{h, path.Base(ref.Path)}, nil // a file's URL: that file alone
	case hub.KindURL:
		base, file := in.URL, ""
		if u, err := url.Parse(in.URL); err == nil && isFileName(path.Base(u.Path)) && !strings.HasSuffix(u.Path, "/") {
			file = path.Base(u.Path)
			u.Path = path.Dir(u.Path) + "/"
			base = u.String()
		}
		h, err := source.NewHTTP(base)
		if err != nil {
			return nil, err
		}
		h.Token = in.Token
		if file != "" {
			return onlyFS{h, file}, nil
		}
		return h, nil
	}
	return nil, fmt.Errorf("%s is not a URL or a Hub repository", clip(in.URL, 120))
}

// tool names this build of clefcheck.
func tool() report.Tool {
	t := report.Tool{Name: "clefcheck", Version: "(devel)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			t.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				t.Revision = s.Value
			case "vcs.modified":
				t.Modified = s.Value == "true"
			}
		}
	}
	return t
}

// toolFor is tool() with the engine the spec names (the page's build).
func toolFor(spec *jobs.Spec) report.Tool {
	t := tool()
	t.Engine = clip(spec.Engine, 100)
	return t
}

// runSource says what a source resolves to without reading its files: a
// Hub repository's commit and listing (with the listed SHA-256), or a
// URL as it is.
func runSource(ctx context.Context, spec *jobs.Spec) (*jobs.Output, error) {
	in := spec.Adapter
	if in == nil || in.URL == "" {
		return nil, errors.New("no source given")
	}
	ref, err := hub.Parse(in.URL, in.Endpoint)
	if err != nil {
		return nil, err
	}
	switch ref.Kind {
	case hub.KindURL:
		return &jobs.Output{Source: &report.SourceInfo{Kind: "url", URL: ref.URL}, Note: "URL " + clip(ref.URL, 200) + ", read by range"}, nil
	case hub.KindHub:
	default:
		return nil, fmt.Errorf("%s is a local path: choose its files or its folder", clip(in.URL, 120))
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	snap, err := (&hub.Client{Endpoint: ref.Endpoint, Token: in.Token}).Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	out := &jobs.Output{Source: &report.SourceInfo{Kind: "hub", Endpoint: snap.Ref.Endpoint, Repo: snap.Ref.Repo, Revision: snap.Ref.Rev, Commit: snap.Commit, Path: ref.Path}}
	for _, f := range snap.Files {
		out.Listing = append(out.Listing, report.FileInfo{Name: f.Path, Size: f.Size, Listed: f.SHA256})
	}
	out.Note = fmt.Sprintf("%s at %s → commit %s", snap.Ref.Repo, snap.Ref.Rev, snap.Commit)
	if ref.Path != "" {
		out.Note += ", " + ref.Path
	}
	out.Note += fmt.Sprintf(" · %d files listed · %s", len(snap.Files), snap.Ref.Endpoint)
	return out, nil
}

// sourceOf describes where an input's files come from.
func sourceOf(in *jobs.Input, fsys fs.FS, label string) report.SourceInfo {
	if d, ok := fsys.(*digestFS); ok {
		fsys = d.FS
	}
	if h, ok := fsys.(*hub.FS); ok {
		s := h.Snapshot()
		return report.SourceInfo{Kind: "hub", Endpoint: s.Ref.Endpoint, Repo: s.Ref.Repo, Revision: s.Ref.Rev, Commit: s.Commit, Path: s.Folder()}
	}
	switch {
	case in == nil:
		return report.SourceInfo{}
	case in.URL != "":
		return report.SourceInfo{Kind: "url", URL: in.URL}
	}
	return report.SourceInfo{Kind: "local", Local: label}
}

// claimsInfo names a profile and its digest: the SHA-256 of its canonical
// JSON, so the same profile has the same digest however it was given.
func claimsInfo(p *claims.Profile) *report.ClaimsInfo {
	if p == nil {
		return nil
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(data)
	return &report.ClaimsInfo{Name: p.Name, SHA256: hex.EncodeToString(sum[:])}
}

// digests finishes the files' digests and checks them against the SHA-256
// the host lists (a Hub repository's LFS oids): a difference is file.digest.
func digests(ctx context.Context, d *digestFS, prov *report.Provenance) []report.Finding {
	files, sum, err := d.Finish(ctx)
	if err != nil {
		prov.Digests = report.DigestSummary{Why: "could not finish: " + clip(err.Error(), 300)}
		f := report.ErrorOf(fmt.Errorf("the files' SHA-256 could not be computed: %w", err), "digests")
		if f.Code == report.CheckInvalid { // no hint of its own (a hash that failed, not a read)
			f.Message += " — run it again, or skip the files' SHA-256 (the Audit page's box, --no-digest) to check the rest without them"
		}
		return []report.Finding{f}
	}
	prov.Files, prov.Digests = files, sum
	h, _ := d.FS.(*hub.FS)
	var out []report.Finding
	for i := range prov.Files {
		f := &prov.Files[i]
		if h != nil {
			if x, ok := h.File(f.Name); ok {
				f.Listed = x.SHA256
			}
		}
		if f.Listed != "" && f.SHA256 != "" && f.Listed != f.SHA256 {
			out = append(out, report.Finding{Code: report.FileDigest, Severity: report.Fail, Subject: f.Name, Measured: f.SHA256, Expected: f.Listed,
				Message: fmt.Sprintf("the bytes read have SHA-256 %s, the host lists %s: the file is not the one published", f.SHA256[:16]+"…", f.Listed[:min(16, len(f.Listed))]+"…")})
		}
	}
	return out
}

// stamp gives a check's result its provenance, when the check did not
// (the audit makes its own, with the files' digests): the tool, the
// inputs by role, the time.
func stamp(out *jobs.Output, spec *jobs.Spec, begun time.Time) {
	var p **report.Provenance
	switch {
	case out.Audit != nil:
		p = &out.Audit.Provenance
	case out.Rebuild != nil:
		p = &out.Rebuild.Provenance
	case out.Hidden != nil:
		p = &out.Hidden.Provenance
	case out.Answers != nil:
		p = &out.Answers.Provenance
	case out.Decisions != nil:
		p = &out.Decisions.Provenance
	default:
		return
	}
	if *p != nil {
		return
	}
	prov := &report.Provenance{Tool: toolFor(spec), Started: begun.UTC(), Seconds: time.Since(begun).Seconds(), Mode: spec.Mode,
		Digests: report.DigestSummary{Why: "digests are computed for audits"}}
	if spec.Kind != jobs.KindAudit {
		prov.Mode = ""
	}
	for _, x := range []struct {
		role string
		in   *jobs.Input
	}{{"adapter", spec.Adapter}, {"base", spec.Base}, {"tuned", spec.Tuned}, {"reference", spec.Ref}, {"candidate", spec.Cand}, {"records", spec.RecordFiles}, {"site", spec.Site}} {
		if x.in != nil {
			prov.Inputs = append(prov.Inputs, report.Input{Role: x.role, SourceInfo: sourceOf(x.in, nil, x.in.String())})
		}
	}
	if spec.Server != "" {
		prov.Inputs = append(prov.Inputs, report.Input{Role: "server", SourceInfo: report.SourceInfo{Kind: "url", URL: spec.Server}})
	}
	*p = prov
}

// isFileName tells a URL naming one file (records.jsonl, a report, a
// checkpoint) from a folder's.
func isFileName(name string) bool {
	switch path.Ext(name) {
	case ".jsonl", ".json", ".safetensors":
		return true
	}
	return false
}

// onlyFS is a folder seen as holding one file: the input is that file (a
// records file's URL, a Hub blob URL).
type onlyFS struct {
	fsys fs.FS
	name string
}

func (o onlyFS) Open(name string) (fs.File, error) {
	switch name {
	case ".":
		return &listedDir{list: o.entries}, nil
	case o.name:
		return o.fsys.Open(name)
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// Observe passes fn to the source, when it can be observed (a URL's
// ranges, for the digest).
func (o onlyFS) Observe(fn func(name string, off int64, b []byte)) {
	if ob, ok := o.fsys.(interface {
		Observe(func(name string, off int64, b []byte))
	}); ok {
		ob.Observe(fn)
	}
}

// SetContext passes ctx to the source (the job's: runner.open).
func (o onlyFS) SetContext(ctx context.Context) {
	if c, ok := o.fsys.(interface{ SetContext(context.Context) }); ok {
		c.SetContext(ctx)
	}
}

func (o onlyFS) Stat(name string) (fs.FileInfo, error) {
	if name == "." {
		return dirInfo{}, nil
	}
	if name != o.name {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fs.Stat(o.fsys, name)
}

func (o onlyFS) entries() ([]fs.DirEntry, error) {
	st, err := fs.Stat(o.fsys, o.name)
	if err != nil {
		return nil, err
	}
	return []fs.DirEntry{fs.FileInfoToDirEntry(st)}, nil
}

// Tool is the running program as the reports name it: its module version
// and VCS revision from the build info.
func Tool() report.Tool { return tool() }
