package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kvit-s/clefcheck/wasm/source"
)

// MaxIndexSize bounds an index file (a 27B checkpoint's index is ~100 KB).
const MaxIndexSize = 64 << 20

// Index is a parsed *.safetensors.index.json.
type Index struct {
	TotalSize int64             // metadata.total_size, -1 when absent
	WeightMap map[string]string // tensor name → shard file name
	Shards    []string          // distinct shard names, sorted
	Metadata  map[string]json.RawMessage
}

// ParseIndex parses an index strictly: a JSON object with a "weight_map" of
// string → string without duplicate keys, an optional "metadata" object, and
// shard names that are plain file names (no '/', '\', '..', or scheme).
func ParseIndex(data []byte, name string) (*Index, error) {
	if !utf8.Valid(data) {
		return nil, errorf(ErrHeader, name, "index is not valid UTF-8")
	}
	var fail func(format string, a ...any) error
	js := newJSONStream(bytes.NewReader(data), false)
	dec := json.NewDecoder(js)
	dec.UseNumber()
	p := &tokens{dec: dec, js: js}
	// fail keeps a limit's sentinel (ErrLimit), or makes the error ErrHeader.
	fail = func(format string, a ...any) error {
		err := fmt.Errorf(format, a...)
		var e *Error
		if errors.As(err, &e) {
			return errorf(e.Err, name, "%s", e.Msg)
		}
		if js.err != nil && !errors.Is(err, js.err) {
			err = js.err
		}
		return errorf(ErrHeader, name, "%v", err)
	}
	if err := p.delim('{', "index"); err != nil {
		return nil, fail("%w", err)
	}
	idx := &Index{TotalSize: -1, Metadata: map[string]json.RawMessage{}}
	seen := map[string]bool{}
	for dec.More() {
		key, err := p.str("index key")
		if err != nil {
			return nil, fail("%w", err)
		}
		if seen[key] {
			return nil, fail("duplicate key %s", strconv.Quote(truncate(key, 60)))
		}
		seen[key] = true
		switch key {
		case "weight_map":
			if idx.WeightMap, err = parseWeightMap(p); err != nil {
				return nil, fail("%w", err)
			}
		case "metadata":
			var raw map[string]json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fail("metadata: %v", err)
			}
			if raw == nil {
				return nil, fail("metadata is not an object")
			}
			idx.Metadata = raw
			if ts, ok := raw["total_size"]; ok {
				v, err := strconv.ParseInt(strings.TrimSuffix(string(ts), ".0"), 10, 64)
				if err != nil || v < 0 {
					return nil, fail("metadata.total_size %s is not a byte count", truncate(string(ts), 40))
				}
				idx.TotalSize = v
			}
		default:
			// Unknown top-level keys are tolerated, as the Hub's loaders do.
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fail("%s: %v", key, err)
			}
		}
	}
	if err := p.delim('}', "index"); err != nil {
		return nil, fail("%w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail("trailing data after the index object")
	}
	if idx.WeightMap == nil {
		return nil, fail("no weight_map")
	}
	set := map[string]bool{}
	for t, shard := range idx.WeightMap {
		if err := checkShardName(shard); err != nil {
			return nil, fail("tensor %s: shard %s", strconv.Quote(truncate(t, 80)), err)
		}
		set[shard] = true
	}
	for s := range set {
		idx.Shards = append(idx.Shards, s)
	}
	sort.Strings(idx.Shards)
	return idx, nil
}

func parseWeightMap(p *tokens) (map[string]string, error) {
	if err := p.delim('{', "weight_map"); err != nil {
		return nil, err
	}
	m := map[string]string{}
	shards := map[string]bool{}
	for p.dec.More() {
		k, err := p.str("weight_map key")
		if err != nil {
			return nil, err
		}
		v, err := p.str("weight_map value")
		if err != nil {
			return nil, err
		}
		if len(m) == MaxTensors {
			return nil, limitf("", "weight_map lists more than %d tensors (MaxTensors)", MaxTensors)
		}
		if !shards[v] {
			if len(shards) == MaxShards {
				return nil, limitf("", "weight_map names more than %d shard files (MaxShards)", MaxShards)
			}
			shards[v] = true
		}
		if old, dup := m[k]; dup {
			if old != v {
				return nil, fmt.Errorf("tensor %s is mapped to two shards, %s and %s", strconv.Quote(truncate(k, 80)), old, v)
			}
			return nil, fmt.Errorf("tensor %s is listed twice", strconv.Quote(truncate(k, 80)))
		}
		m[k] = v
	}
	return m, p.delim('}', "weight_map")
}

func checkShardName(s string) error {
	switch {
	case s == "":
		return errors.New("name is empty")
	case len(s) > MaxShardNameLen:
		return fmt.Errorf("name of %d bytes is longer than %d (MaxShardNameLen)", len(s), MaxShardNameLen)
	case strings.ContainsAny(s, `/\`):
		return fmt.Errorf("%s contains a path separator", strconv.Quote(truncate(s, 80)))
	case s == "." || s == ".." || strings.Contains(s, ".."):
		return fmt.Errorf("%s contains '..'", strconv.Quote(truncate(s, 80)))
	case strings.Contains(s, ":"):
		return fmt.Errorf("%s looks like a URL or drive (':')", strconv.Quote(truncate(s, 80)))
	case !strings.HasSuffix(s, ".safetensors"):
		return fmt.Errorf("%s is not a .safetensors file", strconv.Quote(truncate(s, 80)))
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%s contains a control character", strconv.Quote(truncate(s, 80)))
		}
	}
	return nil
}

// Checkpoint is a single safetensors file or a set of shards joined by an
// index, seen as one collection of tensors.
type Checkpoint struct {
	Files  []*Reader
	Index  *Index // nil for a single file
	where  map[string]*Reader
	names  []string
	closer []io.Closer
}

// Names lists every tensor name, sorted.
func (c *Checkpoint) Names() []string { return c.names }

// Tensor finds a tensor and the file that holds it.
func (c *Checkpoint) Tensor(name string) (TensorInfo, *Reader, bool) {
	r, ok := c.where[name]
	if !ok {
		return TensorInfo{}, nil, false
	}
	t, _ := r.Tensor(name)
	return t, r, true
}

// TotalBytes is the sum of all tensors' byte lengths.
func (c *Checkpoint) TotalBytes() int64 {
	var n int64
	for _, r := range c.Files {
		for _, t := range r.Tensors {
			n += t.Bytes()
		}
	}
	return n
}

// Close closes every file.
func (c *Checkpoint) Close() error {
	var first error
	for _, cl := range c.closer {
		if err := cl.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// OpenCheckpoint opens dir/stem.safetensors, or, failing that, the shards
// named by dir/stem.safetensors.index.json. stem is "adapter_model" for an
// adapter, "model" for a checkpoint. Problems come back as *Error (Errors
// when there are several; an error of package source when a file cannot be
// opened or read whole); a checkpoint is returned only when
// every file opened and agreed with the index.
func OpenCheckpoint(fsys fs.FS, dir, stem string) (*Checkpoint, error) {
	single := path.Join(dir, stem+".safetensors")
	_, statErr := fs.Stat(fsys, single)
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		// Not "not there" but "could not ask" (the network, a refusal):
		// say so, never "no checkpoint".
		return nil, errorf(statErr, single, "cannot be read: %v", statErr)
	}
	if statErr == nil {
		f, err := source.Open(fsys, single)
		if err != nil {
			return nil, err
		}
		r, err := NewReader(f, f.Size, single)
		if err != nil {
			f.Close()
			return nil, err
		}
		c := &Checkpoint{Files: []*Reader{r}, where: map[string]*Reader{}, closer: []io.Closer{f}}
		for _, t := range r.Tensors {
			c.where[t.Name] = r
			c.names = append(c.names, t.Name)
		}
		sort.Strings(c.names)
		return c, nil
	}
	idxName := path.Join(dir, stem+".safetensors.index.json")
	if _, err := fs.Stat(fsys, idxName); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, errorf(err, idxName, "cannot be read: %v", err)
		}
		return nil, errorf(errors.Join(ErrNoCheckpoint, statErr), single, "neither %s.safetensors nor %s.safetensors.index.json is in the folder (%v)", stem, stem, statErr)
	}
	data, err := source.ReadSmall(fsys, idxName, MaxIndexSize)
	if err != nil {
		return nil, err
	}
	idx, err := ParseIndex(data, idxName)
	if err != nil {
		return nil, err
	}
	return openShards(fsys, dir, idxName, idx)
}

func openShards(fsys fs.FS, dir, idxName string, idx *Index) (*Checkpoint, error) {
	c := &Checkpoint{Index: idx, where: map[string]*Reader{}}
	var errs Errors
	add := func(subject, format string, a ...any) { errs = append(errs, errorf(ErrLayout, subject, format, a...)) }
	total := 0
	for _, shard := range idx.Shards {
		name := path.Join(dir, shard)
		f, err := source.Open(fsys, name)
		if err != nil {
			errs = append(errs, &Error{Subject: name, Msg: fmt.Sprintf("shard named by %s cannot be opened: %v", idxName, err), Err: err})
			continue
		}
		c.closer = append(c.closer, f)
		r, err := NewReader(f, f.Size, name)
		if err != nil {
			var es Errors
			var e *Error
			if errors.As(err, &es) {
				errs = append(errs, es...)
			} else if errors.As(err, &e) {
				errs = append(errs, e)
			} else {
				errs = append(errs, &Error{Subject: name, Msg: err.Error(), Err: err})
			}
			continue
		}
		c.Files = append(c.Files, r)
		if total += len(r.Tensors); total > MaxTensors {
			errs = append(errs, limitf(idxName, "the shards hold more than %d tensors together (MaxTensors)", MaxTensors))
			break
		}
		for _, t := range r.Tensors {
			if other, dup := c.where[t.Name]; dup {
				add(t.Name, "tensor is in two shards, %s and %s", other.Name, shard)
				continue
			}
			c.where[t.Name] = r
			if want, listed := idx.WeightMap[t.Name]; !listed {
				add(t.Name, "tensor is in %s but not in the weight_map of %s", shard, idxName)
			} else if want != shard {
				add(t.Name, "tensor is in %s but %s maps it to %s", shard, idxName, want)
			}
		}
	}
	opened := map[string]bool{}
	for _, r := range c.Files {
		opened[path.Base(r.Name)] = true
	}
	var missing []string
	for t, shard := range idx.WeightMap {
		if _, ok := c.where[t]; !ok && opened[shard] {
			missing = append(missing, t)
		}
	}
	sort.Strings(missing)
	for _, t := range missing {
		add(t, "%s maps the tensor to %s, which does not hold it", idxName, idx.WeightMap[t])
	}
	if len(errs) == 0 && idx.TotalSize >= 0 && idx.TotalSize != c.TotalBytes() {
		add(idxName, "metadata.total_size is %d but the shards' tensors hold %d bytes", idx.TotalSize, c.TotalBytes())
	}
	if len(errs) > 0 {
		c.Close()
		return nil, capErrors(errs, idxName)
	}
	for t := range c.where {
		c.names = append(c.names, t)
	}
	sort.Strings(c.names)
	c.Index = idx
	return c, nil
}
