package report

import (
	"strings"
	"testing"
)

func tableSample() *Table {
	t := &Table{ID: "t", Cols: []Column{{Name: "module"}, {Name: "σ₁", Num: true}, {Name: "spark", Kind: "spectrum"}}}
	add := func(m string, layer int, short string, sigma float64, failing bool) {
		s := NoValue
		if sigma >= 0 {
			s = NumCell(sigma, "x")
		}
		t.Rows = append(t.Rows, Row{Cells: []Cell{TextCell(m), s, TextCell("")}, Layer: layer, Module: short, Failing: failing})
	}
	add("layers.40.mlp.up_proj", 40, "mlp.up_proj", 2, false)
	add("layers.41.mlp.up_proj", 41, "mlp.up_proj", -1, true)
	add("layers.41.self_attn.q_proj, \"odd\"", 41, "self_attn.q_proj", 0.5, false)
	add("layers.43.mlp.gate_proj", 43, "mlp.gate_proj", 1, true)
	return t
}

func layersOf(rows []Row) string {
	var out []string
	for _, r := range rows {
		out = append(out, strings.Split(r.Cells[0].T, ".")[1])
	}
	return strings.Join(out, " ")
}

// TestTableView: sorting by a number (no value last, both ways) and by
// text, the layer, group, search and failing filters, paging, and CSV of
// what a view keeps.
func TestTableView(t *testing.T) {
	tb := tableSample()
	for _, c := range []struct {
		v    View
		want string
	}{
		{View{}, "40 41 41 43"},
		{View{Sort: 2}, "41 43 40 41"},             // 0.5, 1, 2, none
		{View{Sort: 2, Desc: true}, "40 43 41 41"}, // 2, 1, 0.5, none
		{View{Sort: 1, Desc: true}, "43 41 41 40"},
		{View{Layer: "41"}, "41 41"},
		{View{Module: "mlp.up_proj"}, "40 41"},
		{View{Query: "Q_PROJ"}, "41"},
		{View{Failing: true, Sort: 1}, "41 43"},
		{View{Failing: true, Layer: "40"}, ""},
	} {
		if got := layersOf(tb.Shown(c.v)); got != c.want {
			t.Errorf("%+v: %q, want %q", c.v, got, c.want)
		}
	}
	got := tb.CSV(tb.Shown(View{Sort: 2}))
	want := "module,σ₁\r\n\"layers.41.self_attn.q_proj, \"\"odd\"\"\",0.5\r\nlayers.43.mlp.gate_proj,1\r\nlayers.40.mlp.up_proj,2\r\nlayers.41.mlp.up_proj,\r\n"
	if got != want {
		t.Errorf("CSV:\n%q\nwant\n%q", got, want)
	}
	p := tb.PageOf(View{Sort: 2, Page: 7}, 3)
	if p.Pages != 2 || p.View.Page != 1 || len(p.Rows) != 1 || p.Shown != 4 || p.Total != 4 || p.Failing != 2 ||
		len(p.Layers) != 3 || p.Layers[0] != 40 || strings.Join(p.Groups, ",") != "mlp.gate_proj,mlp.up_proj,self_attn.q_proj" {
		t.Errorf("page: %+v", p)
	}
	if s := StatusCell("fail"); s.T != "✗ fail" || *s.CSV != "fail" || *s.N != 0 {
		t.Errorf("status %+v", s)
	}
	if s := StatusCell("ok"); s.T != "✓ ok" || *s.N != 4 {
		t.Errorf("status %+v", s)
	}
}

// TestAuditLines: no empty field, thousands separators, plurals, no time
// while running.
func TestAuditLines(t *testing.T) {
	s := AuditSummary{Adapter: "demo", Pairs: 1, Large: 1, Parameters: 550272, Bytes: 1100544, Rank: 16, Scaling: 1, Mode: ModeRandomized, Seconds: 1.5}
	l := s.Lines(true)
	if l[0] != "demo — 1 pair (1 large, 0 small), 550,272 parameters, 1.1 MB, r = 16, scaling 1, randomized audit running" {
		t.Errorf("running: %q", l[0])
	}
	if l[1] != "no extraction report; no claims profile" {
		t.Errorf("from: %q", l[1])
	}
	s.Expectations, s.Claims, s.Report, s.Pairs = "claims demo", "demo", "extraction-report.json", 186
	l = s.Lines(false)
	if !strings.Contains(l[0], "186 pairs") || !strings.HasSuffix(l[0], "randomized audit in 1.50 s") || l[1] != "expected pairs from claims demo; report: extraction-report.json; claims: demo" {
		t.Errorf("done: %q", l)
	}
}
