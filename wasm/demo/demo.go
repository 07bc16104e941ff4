package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/kvit-s/clefcheck/wasm/model"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// Paths inside a world directory.
const (
	RecordsDir = "records"
	AnswersDir = "reference/answers"
	HiddenDir  = "reference/hidden"
)

// Build generates the whole demo world into dir: checkpoints, adapter and
// report (package world), then records and references.
func Build(dir string, seed uint64) error {
	if err := world.Generate(dir, seed); err != nil {
		return err
	}
	return References(dir)
}

// Main runs a test binary's tests (a TestMain's m.Run) with a demo world
// built in a temporary folder, stored in *dir, and removed afterwards; it
// returns the exit code.
func Main(run func() int, prefix string, dir *string) int {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(d)
	if err := Build(d, 1); err != nil {
		panic(err)
	}
	*dir = d
	return run()
}

// Decide runs one record through a model: the answer and the hidden states.
func Decide(m *model.Model, id, prompt string, options []string) (*refs.Answer, *refs.Hidden, error) {
	ids := model.Tokenize(prompt, options)
	res, err := m.Forward(ids, options)
	if err != nil {
		return nil, nil, err
	}
	a := &refs.Answer{ID: id, Options: options, Logits: res.Logits, Probs: res.Probs, Choice: options[res.Choice]}
	in := make([]int64, len(ids))
	for i, v := range ids {
		in[i] = int64(v)
	}
	h := &refs.Hidden{ID: id, Layers: res.Layers, InputIDs: in, Shape: []int{len(res.Layers), res.T, m.Arch.Hidden}, Data: res.Hidden}
	return a, h, nil
}

// References computes the records' answers and hidden states with the
// tuned model at full precision (float32 activations, bf16 weights as
// stored) and writes records/, reference/answers/ and reference/hidden/.
//
// The records' known answers are synthetic: they are the reference choice
// for most records, another option for every ninth (so that the tuned model
// at full precision gets a few wrong, as Clef does), and absent for every
// twelfth.
func References(dir string) error {
	head, err := model.LoadHead(source.Dir(dir))
	if err != nil {
		return err
	}
	m, err := model.Load(source.Dir(filepath.Join(dir, world.TunedDir)), head, model.Options{})
	if err != nil {
		return err
	}
	if err := calibrate(dir, m, head); err != nil {
		return err
	}
	for _, d := range []string{RecordsDir, AnswersDir, HiddenDir} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	recs := world.Records()
	byDataset := map[string][]world.Record{}
	answers := map[string][]*refs.Answer{}
	var order []string
	for i, r := range recs {
		a, h, err := Decide(m, r.ID, r.Prompt, r.Options)
		if err != nil {
			return fmt.Errorf("%s: %w", r.ID, err)
		}
		switch {
		case i%12 == 11:
			r.Answer = ""
		case i%9 == 4:
			for j, o := range r.Options {
				if o == a.Choice {
					r.Answer = r.Options[(j+1)%len(r.Options)]
				}
			}
		default:
			r.Answer = a.Choice
		}
		if _, ok := byDataset[r.Dataset]; !ok {
			order = append(order, r.Dataset)
		}
		byDataset[r.Dataset] = append(byDataset[r.Dataset], r)
		answers[r.Dataset] = append(answers[r.Dataset], a)
		var buf bytes.Buffer
		if err := h.Encode(&buf, "F32"); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, HiddenDir, refs.FileName(r.ID)), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	for _, ds := range order {
		var rb bytes.Buffer
		enc := json.NewEncoder(&rb)
		for _, r := range byDataset[ds] {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(dir, RecordsDir, ds+".jsonl"), rb.Bytes(), 0o644); err != nil {
			return err
		}
		var ab bytes.Buffer
		if err := refs.WriteAnswers(&ab, answers[ds]); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, AnswersDir, ds+".jsonl"), ab.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// LoadServer loads the model a decision server runs: the base checkpoint
// with the adapter (unmerged unless merge), optionally NVFP4-quantized, with
// some modules' LoRA dropped.
func LoadServer(dir string, opt model.Options) (*model.Model, error) {
	head, err := model.LoadHead(source.Dir(dir))
	if err != nil {
		return nil, err
	}
	if opt.Adapter == nil {
		opt.Adapter = source.Dir(filepath.Join(dir, world.AdapterDir))
	}
	return model.Load(source.Dir(filepath.Join(dir, world.BaseDir)), head, opt)
}

// calibrate fits the stand-in scoring network's centre and temperature on
// the records: the centre is the mean projected feature (so that what all
// prompts share does not pick the answer), the temperature spreads the
// logits to a standard deviation of about 2. It rewrites head.safetensors.
func calibrate(dir string, m *model.Model, head *model.Head) error {
	recs := world.Records()
	var feats [][]float64
	var runs []*model.Result
	var last []int
	for _, r := range recs {
		ids := model.Tokenize(r.Prompt, r.Options)
		res, err := m.Forward(ids, nil)
		if err != nil {
			return err
		}
		runs, last = append(runs, res), append(last, int(ids[len(ids)-1]))
		feats = append(feats, head.Features(m, res.Hidden, res.Layers, res.T, last[len(last)-1]))
	}
	H := head.H
	for i := 0; i < H; i++ {
		var s float64
		for _, f := range feats {
			s += f[i]
		}
		head.Center[i] = float32(s / float64(len(feats)))
	}
	head.Temp = 1
	var ss, n float64
	for i, r := range recs {
		res := runs[i]
		lg := head.Score(m, res.Hidden, res.Layers, res.T, last[i], r.Options)
		var mean float64
		for _, v := range lg {
			mean += v / float64(len(lg))
		}
		for _, v := range lg {
			ss += (v - mean) * (v - mean)
			n++
		}
	}
	if sd := math.Sqrt(ss / n); sd > 0 {
		head.Temp = float32(2 / sd)
	}
	var buf bytes.Buffer
	if err := head.Encode(&buf); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, model.HeadFile), buf.Bytes(), 0o644)
}
