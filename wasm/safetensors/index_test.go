package safetensors

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func shard(t testing.TB, names ...string) []byte {
	var b bytes.Buffer
	var ts []Tensor
	for _, n := range names {
		ts = append(ts, Tensor{Spec{n, "F32", []int64{2}}, make([]byte, 8)})
	}
	if err := Encode(&b, nil, ts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const goodIndex = `{"metadata":{"total_size":24},"weight_map":{"a":"m-00001-of-00002.safetensors","b":"m-00001-of-00002.safetensors","c":"m-00002-of-00002.safetensors"}}`

func shardedFS(t testing.TB, index string) fstest.MapFS {
	return fstest.MapFS{
		"ck/m.safetensors.index.json":     {Data: []byte(index)},
		"ck/m-00001-of-00002.safetensors": {Data: shard(t, "a", "b")},
		"ck/m-00002-of-00002.safetensors": {Data: shard(t, "c")},
	}
}

func TestShardedOK(t *testing.T) {
	dir := t.TempDir()
	for name, f := range shardedFS(t, goodIndex) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := OpenCheckpoint(os.DirFS(dir), "ck", "m")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := strings.Join(c.Names(), ","); got != "a,b,c" {
		t.Fatalf("names = %s", got)
	}
	if ti, r, ok := c.Tensor("c"); !ok || !strings.HasSuffix(r.Name, "00002-of-00002.safetensors") || ti.Bytes() != 8 {
		t.Fatalf("tensor c = %+v in %v", ti, r)
	}
	if c.TotalBytes() != 24 {
		t.Errorf("total = %d", c.TotalBytes())
	}
}

func TestShardedReject(t *testing.T) {
	cases := []struct {
		name, index string
		mess        func(fs fstest.MapFS)
		want        error
		msg         string
	}{
		{"slash in shard", strings.Replace(goodIndex, `"c":"m-`, `"c":"../m-`, 1), nil, ErrHeader, "path separator"},
		{"dotdot in shard", strings.Replace(goodIndex, `"c":"m-`, `"c":"..m-`, 1), nil, ErrHeader, "'..'"},
		{"scheme in shard", strings.Replace(goodIndex, `"c":"m-`, `"c":"http:m-`, 1), nil, ErrHeader, "URL"},
		{"tensor twice", strings.Replace(goodIndex, `"c":"m-00002`, `"a":"m-00002`, 1), nil, ErrHeader, "two shards"},
		{"no weight map", `{"metadata":{}}`, nil, ErrHeader, "no weight_map"},
		{"not json", `{"weight_map":`, nil, ErrHeader, "JSON"},
		{"bad total", strings.Replace(goodIndex, "24", `"x"`, 1), nil, ErrHeader, "total_size"},
		{"wrong total", strings.Replace(goodIndex, "24", "25", 1), nil, ErrLayout, "total_size is 25"},
		{"missing shard", goodIndex, func(fs fstest.MapFS) { delete(fs, "ck/m-00002-of-00002.safetensors") }, fs.ErrNotExist, "cannot be opened"},
		{"tensor missing from shard", goodIndex, func(fs fstest.MapFS) { fs["ck/m-00002-of-00002.safetensors"] = &fstest.MapFile{Data: shard(t, "d")} }, ErrLayout, "does not hold it"},
		{"tensor in two shards", goodIndex, func(fs fstest.MapFS) {
			fs["ck/m-00002-of-00002.safetensors"] = &fstest.MapFile{Data: shard(t, "c", "a")}
		}, ErrLayout, "in two shards"},
		{"corrupt shard", goodIndex, func(fs fstest.MapFS) {
			fs["ck/m-00002-of-00002.safetensors"] = &fstest.MapFile{Data: []byte("garbage!garbage")}
		}, ErrHeader, "exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := shardedFS(t, c.index)
			if c.mess != nil {
				c.mess(fs)
			}
			_, err := OpenCheckpoint(fs, "ck", "m")
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v does not wrap %v", err, c.want)
			}
			var all []string
			var es Errors
			var e *Error
			if errors.As(err, &es) {
				for _, x := range es {
					all = append(all, x.Msg)
				}
			} else if errors.As(err, &e) {
				all = append(all, e.Msg)
			} else {
				t.Fatalf("not an error of this package: %v", err)
			}
			if msgs := strings.Join(all, "; "); !strings.Contains(msgs, c.msg) {
				t.Errorf("messages %q lack %q", msgs, c.msg)
			}
		})
	}
}

func FuzzIndex(f *testing.F) {
	f.Add([]byte(goodIndex))
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := ParseIndex(data, "fuzz.json")
		if err != nil {
			if !errors.Is(err, ErrHeader) {
				t.Fatalf("not ErrHeader: %v", err)
			}
			return
		}
		for _, s := range idx.Shards {
			if strings.ContainsAny(s, `/\:`) || strings.Contains(s, "..") {
				t.Fatalf("accepted shard name %q", s)
			}
		}
	})
}
