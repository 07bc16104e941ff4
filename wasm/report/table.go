package report

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// Table is a result as the pages show it: columns that explain themselves
// (a tooltip and a legend line, with the tolerance) and rows of display
// text with numeric sort keys. The engine makes it (runner.Tables) so that
// the pages only draw it; View sorts and filters it, CSV exports it.
type Table struct {
	ID    string   `json:"id"`              // the table's element id on the page
	Name  string   `json:"name"`            // the CSV file's name, without .csv
	Group string   `json:"group,omitempty"` // what a row's Module is: module, dataset ("": no such filter)
	Note  string   `json:"note,omitempty"`  // a line under the table (its bounds, where they come from)
	Cols  []Column `json:"cols"`
	Rows  []Row    `json:"rows"`
}

// Column is a table's column.
type Column struct {
	Name string `json:"name"`
	Tip  string `json:"tip"`            // what it is, and its tolerance
	Num  bool   `json:"num,omitempty"`  // sorts by number
	Kind string `json:"kind,omitempty"` // "": text; "code": a finding code (linked); "spectrum": drawn by the page, not exported
}

// Cell is a cell: its text, its sort key N (nil: no value, sorted last)
// and its CSV field when it differs from the text (full precision).
type Cell struct {
	T   string   `json:"t"`
	N   *float64 `json:"n,omitempty"`
	CSV *string  `json:"c,omitempty"`
}

// Row is a row: its cells, its class (bad, warn, unchecked, ""), whether
// it fails, its layer (−1: none), its group (module type, dataset) and
// the index of the item it shows in the result (a pair, a record).
type Row struct {
	Cells   []Cell `json:"cells"`
	Class   string `json:"class,omitempty"`
	Failing bool   `json:"failing,omitempty"`
	Layer   int    `json:"layer"`
	Module  string `json:"module,omitempty"`
	Ref     int    `json:"ref"`
}

// TextCell is a text cell; NumCell a number shown as text (its full
// precision in the CSV); NoValue a cell with no value.
func TextCell(s string) Cell { return Cell{T: s} }

func NumCell(x float64, text string) Cell {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return Cell{T: text}
	}
	c := strconv.FormatFloat(x, 'g', -1, 64)
	return Cell{T: text, N: &x, CSV: &c}
}

var NoValue = Cell{T: "–", CSV: new(string)}

// View is how a table is shown: the sorted column (1-based, 0: as given),
// the filters and the page.
type View struct {
	Sort    int
	Desc    bool
	Layer   string // a layer's number, "" all
	Module  string // a group, "" all
	Query   string // text any cell holds (case-insensitive)
	Failing bool
	Page    int
}

// Shown are the rows v keeps, in its order.
func (t *Table) Shown(v View) []Row {
	q := strings.ToLower(strings.TrimSpace(v.Query))
	var out []Row
	for _, r := range t.Rows {
		if v.Failing && !r.Failing || v.Layer != "" && strconv.Itoa(r.Layer) != v.Layer || v.Module != "" && r.Module != v.Module {
			continue
		}
		hit := q == ""
		for _, c := range r.Cells {
			hit = hit || strings.Contains(strings.ToLower(c.T), q)
		}
		if hit {
			out = append(out, r)
		}
	}
	if i := v.Sort - 1; i >= 0 && i < len(t.Cols) {
		sort.SliceStable(out, func(a, b int) bool {
			x, y := out[a].Cells[i], out[b].Cells[i]
			switch {
			case x.N == nil && y.N == nil:
				if v.Desc {
					return x.T > y.T
				}
				return x.T < y.T
			case x.N == nil || y.N == nil:
				return y.N == nil // no value last, either way
			case v.Desc:
				return *x.N > *y.N
			}
			return *x.N < *y.N
		})
	}
	return out
}

// CSV is rows of the table as CSV (RFC 4180), the columns the page draws
// left out.
func (t *Table) CSV(rows []Row) string {
	var head []string
	for _, c := range t.Cols {
		if c.Kind != "spectrum" {
			head = append(head, c.Name)
		}
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		for j, c := range r.Cells {
			if j < len(t.Cols) && t.Cols[j].Kind != "spectrum" {
				f := c.T
				if c.CSV != nil {
					f = *c.CSV
				}
				out[i] = append(out[i], f)
			}
		}
	}
	return CSV(head, out)
}

// TablePage is a page of a table as a view shows it: the table's
// columns with the page's rows, how many rows the view keeps (Shown) of
// how many (Total), how many fail, and the layers and groups its filters
// offer. The engine answers it (runner.TablePageOf); the page draws it.
type TablePage struct {
	Table
	View    View     `json:"view"`
	Shown   int      `json:"shown"`
	Total   int      `json:"total"`
	Failing int      `json:"failing"`
	Pages   int      `json:"pages"`
	Layers  []int    `json:"layers,omitempty"`
	Groups  []string `json:"groups,omitempty"`
}

// PageOf is the page v shows, perPage rows to a page (the page clamped).
func (t *Table) PageOf(v View, perPage int) *TablePage {
	shown := t.Shown(v)
	p := &TablePage{Table: *t, Shown: len(shown), Total: len(t.Rows), Pages: max(1, (len(shown)+perPage-1)/perPage)}
	v.Page = max(0, min(v.Page, p.Pages-1))
	p.View, p.Rows = v, shown[v.Page*perPage:min(len(shown), (v.Page+1)*perPage)]
	ls, gs := map[int]bool{}, map[string]bool{}
	for _, r := range t.Rows {
		if r.Layer >= 0 && !ls[r.Layer] {
			ls[r.Layer] = true
			p.Layers = append(p.Layers, r.Layer)
		}
		if r.Module != "" && !gs[r.Module] {
			gs[r.Module] = true
			p.Groups = append(p.Groups, r.Module)
		}
		if r.Failing {
			p.Failing++
		}
	}
	sort.Ints(p.Layers)
	sort.Strings(p.Groups)
	return p
}

// StatusCell is a row's status: the word with a mark (never colour alone).
func StatusCell(sev string) Cell {
	marks := map[string]string{"fail": "✗ ", "error": "? ", "warn": "! ", "info": "i "}
	order := map[string]float64{"fail": 0, "error": 1, "warn": 2, "info": 3}
	mark, ok := marks[sev]
	n, known := order[sev]
	if !ok {
		mark = "✓ "
	}
	if !known {
		n = 4
	}
	s := sev
	return Cell{T: mark + sev, N: &n, CSV: &s}
}

// SevClass is a row's class for the worst severity about it.
func SevClass(s Severity) string {
	switch s {
	case Fail:
		return "bad"
	case Warn:
		return "warn"
	case Unchecked:
		return "unchecked"
	}
	return ""
}
