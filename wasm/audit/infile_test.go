package audit

import (
	"context"
	"encoding/binary"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// readLog is an FS whose safetensors files record the offsets they are
// read at, and the sizes of the reads.
type readLog struct {
	fs.FS
	mu    sync.Mutex
	offs  []int64
	sizes []int
}

func (l *readLog) Open(name string) (fs.File, error) {
	f, err := l.FS.Open(name)
	if err != nil || !strings.HasSuffix(name, ".safetensors") {
		return f, err
	}
	return &loggedFile{File: f, l: l}, nil
}

type loggedFile struct {
	fs.File
	l *readLog
}

func (f *loggedFile) ReadAt(p []byte, off int64) (int, error) {
	f.l.mu.Lock()
	f.l.offs = append(f.l.offs, off)
	f.l.sizes = append(f.l.sizes, len(p))
	f.l.mu.Unlock()
	return f.File.(io.ReaderAt).ReadAt(p, off)
}

// TestInFileOrderReads: with InFileOrder (natively from a URL, where the
// digest hashes the ranges as they pass and a range that comes early must
// wait for those before it), one worker reads the adapter's tensor bytes
// in file order, in every mode — even where each pair's lora_B lies
// before its lora_A, read whole (the demo's small pairs) or streamed (a
// pair over WholeReadBytes). Before, lora_A was read first: a range early
// by the size of lora_B, which the digest held, or on many cores dropped.
func TestInFileOrderReads(t *testing.T) {
	a := load(t)
	sort.SliceStable(a.tensors, func(i, j int) bool { // each pair's B first
		mi, mj := strings.Split(a.tensors[i].Name, ".lora_")[0], strings.Split(a.tensors[j].Name, ".lora_")[0]
		if mi != mj {
			return mi < mj
		}
		return strings.Contains(a.tensors[i].Name, "lora_B")
	})
	small := a.write(t, 1)
	// One pair over WholeReadBytes, B [65536, 256] (32 MiB) then A [256, 8192].
	big := t.TempDir()
	const r, in, out = 256, 8192, 65536
	sa, sb := int64(2*r*in), int64(2*out*r)
	header := `{"` + hostileModule + `.lora_B.weight":{"dtype":"BF16","shape":[65536,256],"data_offsets":[0,` + strconv.FormatInt(sb, 10) + `]},"` +
		hostileModule + `.lora_A.weight":{"dtype":"BF16","shape":[256,8192],"data_offsets":[` + strconv.FormatInt(sb, 10) + `,` + strconv.FormatInt(sa+sb, 10) + `]}}`
	writeST(t, filepath.Join(big, "adapter_model.safetensors"), header, sa+sb)
	writeConfig(t, big, r, 2*r)
	if sa+sb <= WholeReadBytes {
		t.Fatalf("the big pair (%d bytes) is read whole", sa+sb)
	}
	for _, dir := range []string{small, big} {
		start := dataStart(t, filepath.Join(dir, "adapter_model.safetensors"))
		for _, mode := range []report.Mode{report.ModeQuick, report.ModeExact, report.ModeRandomized} {
			l := &readLog{FS: source.Dir(dir)}
			if _, err := Run(context.Background(), l, ".", Options{Mode: mode, Workers: 1, InFileOrder: true, NoAutoReport: true}); err != nil {
				t.Fatal(err)
			}
			var last int64 = -1
			n := 0
			for _, off := range l.offs {
				if off < start {
					continue // the header
				}
				n++
				if off < last {
					t.Errorf("%s, %s: a read at %d after one at %d", filepath.Base(dir), mode, off, last)
					break
				}
				last = off
			}
			if n == 0 {
				t.Errorf("%s, %s: no tensor read", filepath.Base(dir), mode)
			}
		}
	}
}

// dataStart is where a safetensors file's tensor bytes begin.
func dataStart(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n [8]byte
	if _, err := io.ReadFull(f, n[:]); err != nil {
		t.Fatal(err)
	}
	return 8 + int64(binary.LittleEndian.Uint64(n[:]))
}
