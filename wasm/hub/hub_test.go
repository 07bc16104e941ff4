package hub_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/fetch"
	"github.com/kvit-s/clefcheck/wasm/hub"
	"github.com/kvit-s/clefcheck/wasm/hub/hubtest"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/world"
)

func TestParse(t *testing.T) {
	const ep = "https://mirror.example/hf"
	hubRef := func(repo, rev, p string, file bool) hub.Ref {
		return hub.Ref{Kind: hub.KindHub, Endpoint: hub.DefaultEndpoint, Repo: repo, Rev: rev, Path: p, File: file}
	}
	for _, c := range []struct {
		in, endpoint string
		want         hub.Ref
	}{
		{"kvit-s/clef-lora-r256", "", hubRef("kvit-s/clef-lora-r256", "main", "", false)},
		{"kvit-s/clef-lora-r256@v1.0", "", hubRef("kvit-s/clef-lora-r256", "v1.0", "", false)},
		{"kvit-s/clef-lora-r256@2f3de3dd85f379784083b0814d997ab627200f0c/reference", "", hubRef("kvit-s/clef-lora-r256", "2f3de3dd85f379784083b0814d997ab627200f0c", "reference", false)},
		{"hf://kvit-s/clef-lora-r256/reference/hidden", "", hubRef("kvit-s/clef-lora-r256", "main", "reference/hidden", false)},
		{"hf://kvit-s/clef-lora-r256/records/arc.jsonl", "", hubRef("kvit-s/clef-lora-r256", "main", "records/arc.jsonl", true)},
		{"hf://models/kvit-s/clef-lora-r256@refs%2Fpr%2F1", "", hubRef("kvit-s/clef-lora-r256", "refs%2Fpr%2F1", "", false)},
		{"https://huggingface.co/kvit-s/clef-lora-r256", "", hubRef("kvit-s/clef-lora-r256", "main", "", false)},
		{"https://huggingface.co/kvit-s/clef-lora-r256/tree/main/reference", "", hubRef("kvit-s/clef-lora-r256", "main", "reference", false)},
		{"https://huggingface.co/kvit-s/clef-lora-r256/blob/main/adapter_model.safetensors", "", hubRef("kvit-s/clef-lora-r256", "main", "adapter_model.safetensors", true)},
		{"https://huggingface.co/kvit-s/clef-lora-r256/resolve/abc123/adapter_config.json", "", hubRef("kvit-s/clef-lora-r256", "abc123", "adapter_config.json", true)},
		{"https://mirror.example/hf/kvit-s/clef-lora-r256/tree/main", ep, hub.Ref{Kind: hub.KindHub, Endpoint: ep, Repo: "kvit-s/clef-lora-r256", Rev: "main"}},
		{"kvit-s/clef-lora-r256", ep + "/", hub.Ref{Kind: hub.KindHub, Endpoint: ep, Repo: "kvit-s/clef-lora-r256", Rev: "main"}},
		{"https://example.org/files/adapter/", "", hub.Ref{Kind: hub.KindURL, URL: "https://example.org/files/adapter/"}},
		{"https://mirror.example/other/path", ep, hub.Ref{Kind: hub.KindURL, URL: "https://mirror.example/other/path"}},
		{"file:///data/adapter", "", hub.Ref{Kind: hub.KindLocal, Local: "/data/adapter"}},
		{"./adapter", "", hub.Ref{Kind: hub.KindLocal, Local: "./adapter"}},
		{"demo", "", hub.Ref{Kind: hub.KindDemo}},
	} {
		got, err := hub.Parse(c.in, c.endpoint)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q, %q) = %+v, %v; want %+v", c.in, c.endpoint, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "hf://kvit-s", "hf://kvit-s/clef/../../etc", "hf://a/b@bad rev", "https://huggingface.co/a/b/blob/main/", "https://x.org/a/?sig=1", "file://host/x"} {
		if got, err := hub.Parse(bad, ""); err == nil {
			t.Errorf("Parse(%q) accepted: %+v", bad, got)
		}
	}
	if _, err := hub.NormalizeEndpoint("ftp://x"); err == nil {
		t.Error("an ftp endpoint was accepted")
	}
}

// hubWithWorld publishes the demo world's adapter folder.
func hubWithWorld(t *testing.T, token string) (*hubtest.Hub, string) {
	t.Helper()
	dir := t.TempDir()
	if err := world.Generate(dir, 2); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	h.PageSize = 2 // paginate the listing
	commit, err := h.Add("kvit-s/clef-lora-r256", "main", filepath.Join(dir), token)
	if err != nil {
		t.Fatal(err)
	}
	return h, commit
}

func TestResolveAndRead(t *testing.T) {
	h, commit := hubWithWorld(t, "")
	ref, _ := hub.Parse("kvit-s/clef-lora-r256/adapter", h.Endpoint)
	c := &hub.Client{Doer: fetch.Default}
	snap, err := c.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit != commit || len(snap.Files) != 3 {
		t.Fatalf("commit %s (want %s), files %+v", snap.Commit, commit, snap.Files)
	}
	for _, f := range snap.Files {
		lfs := strings.HasSuffix(f.Path, ".safetensors")
		if (f.SHA256 != "") != lfs || f.Size <= 0 || !strings.HasPrefix(f.Path, "adapter/") {
			t.Errorf("listed %+v", f)
		}
	}
	fsys, err := snap.FS("")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil || len(ents) != 3 {
		t.Fatalf("ReadDir: %v %v", ents, err)
	}
	data, err := fs.ReadFile(fsys, "adapter_config.json")
	if err != nil || !strings.Contains(string(data), `"r"`) {
		t.Fatalf("adapter_config.json: %v %.80s", err, data)
	}
	f, err := fsys.Open("adapter_model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 8)
	if _, err := f.(io.ReaderAt).ReadAt(head, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if h.CDNRequests() == 0 {
		t.Error("the safetensors file was not read through the CDN redirect")
	}
	if _, err := fsys.Open("adapter_model-00001-of-00002.safetensors"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a name the listing lacks: %v", err)
	}
	if !strings.Contains(snap.ResolveURL("adapter/x y.json"), "/resolve/"+commit+"/adapter/x%20y.json") {
		t.Errorf("resolve URL %s", snap.ResolveURL("adapter/x y.json"))
	}
}

func TestResolveErrors(t *testing.T) {
	h, _ := hubWithWorld(t, "s3cret")
	c := &hub.Client{Doer: fetch.Default}
	for _, x := range []struct {
		src  string
		want error
	}{
		{"kvit-s/clef-lora-r256", report.ErrRefused},          // gated, no token
		{"kvit-s/nope", report.ErrRefused},                    // 401 RepoNotFound
		{"kvit-s/clef-lora-r256@nobranch", report.ErrRefused}, // gated first
	} {
		ref, _ := hub.Parse(x.src, h.Endpoint)
		if _, err := c.Resolve(context.Background(), ref); !errors.Is(err, x.want) {
			t.Errorf("%s: %v, want %v", x.src, err, x.want)
		}
	}
	c.Token = "s3cret"
	ref, _ := hub.Parse("kvit-s/clef-lora-r256@nobranch", h.Endpoint)
	if _, err := c.Resolve(context.Background(), ref); !errors.Is(err, report.ErrMissing) {
		t.Errorf("missing revision: %v", err)
	}
	ref, _ = hub.Parse("kvit-s/clef-lora-r256/adapter", h.Endpoint)
	snap, err := c.Resolve(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	fsys, _ := snap.FS(c.Token)
	if _, err := fs.ReadFile(fsys, "adapter_model.safetensors"); err != nil {
		t.Fatal(err)
	}
	if n := h.TokenReachedCDN(); n != 0 {
		t.Errorf("the token reached the CDN %d times", n)
	}
	ref, _ = hub.Parse("kvit-s/clef-lora-r256/nofolder", h.Endpoint)
	if _, err := c.Resolve(context.Background(), ref); !errors.Is(err, report.ErrMissing) {
		t.Errorf("missing folder: %v", err)
	}
}
