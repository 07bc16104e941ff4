//go:build browser

package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// TestBrowserPickedFileChanges: a picked file that changes on disk while
// it is audited (a download finishing over it, an editor saving) can no
// longer be read: Chromium refuses every read of the File after that. The
// audit must end in ERROR (the file could not be checked), naming the
// file and telling the user to pick it again — never FAIL, which would
// speak about an artifact that was not read, and never a hang. The exact
// deep audit of the 4-layer twin (233 MB, in the pool's workers, with the
// files' SHA-256) is under way when the file's modification time moves:
// as it starts, and a tenth of the way in.
func TestBrowserPickedFileChanges(t *testing.T) {
	dir := t.TempDir()
	if _, err := world.FullLayers(dir, 1, 4); err != nil {
		t.Fatal(err)
	}
	ad := filepath.Join(dir, world.AdapterDir)
	model := filepath.Join(ad, "adapter_model.safetensors")
	p := newTab(t, 4*time.Minute)
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.run(`(() => { const e = document.querySelector("#claims"); e.selectedIndex = [...e.options].findIndex(o => o.text === "(none)"); e.dispatchEvent(new Event("change")) })()`)
	p.do("choosing the mode", chromedp.SetValue("#mode", "exact"))
	p.run(`document.querySelector("#mode").dispatchEvent(new Event("change"))`)
	// Before any byte is read (the file changes as the audit starts), and
	// mid-feed (a tenth of the bytes checked: the pool's spans, the
	// digest's reads and the workers' own all meet the change).
	for i, c := range []struct{ when, ready string }{
		{"as the audit starts", `!!document.querySelector("#progress")`},
		{"mid-audit", `(() => { const b = document.querySelector("#progress progress"); return !!b && b.value >= 0.1 && b.value < 0.8 })()`},
	} {
		p.run(`document.querySelectorAll("#verdict").forEach(e => e.remove())`)
		p.run(`document.querySelector("#adapter-files").value = ""`) // the same files again
		p.upload("#adapter-files", filepath.Join(ad, "adapter_config.json"), model, filepath.Join(ad, "extraction-report.json"))
		if err := p.waitJS("the audit's progress ("+c.when+")", c.ready, time.Minute); err != nil {
			p.shot("picked-file-changed")
			t.Fatalf("%v: %s", err, clip(p.text("main"), 600))
		}
		later := time.Now().Add(time.Duration(i+1) * time.Hour)
		if err := os.Chtimes(model, later, later); err != nil {
			t.Fatal(err)
		}
		changed := time.Now()
		v, err := p.waitText("#verdict", "", 3*time.Minute)
		if err != nil {
			p.shot("picked-file-changed")
			t.Fatalf("%s: no verdict after the file changed: %v: %s", c.when, err, clip(p.text("main"), 1500))
		}
		t.Logf("%s: verdict %q %v after the change", c.when, v, time.Since(changed).Round(time.Millisecond))
		if i == 1 {
			p.shot("picked-file-changed")
		}
		a := downloadedAudit(t, p)
		var msgs []string
		changedFinding := false
		for _, f := range a.Findings {
			msgs = append(msgs, f.Code+": "+f.Message)
			if f.Code == "input.changed" && strings.Contains(f.Message, "adapter_model.safetensors") && strings.Contains(f.Message, "pick it again") {
				changedFinding = true
			}
			if f.Code == "file.unreadable" || f.Code == "header.invalid" || f.Code == "file.digest" {
				t.Errorf("%s: a finding about the artifact, which was not read whole: %s: %s", c.when, f.Code, f.Message)
			}
		}
		t.Logf("%s: findings:\n%s", c.when, strings.Join(msgs, "\n"))
		if !strings.Contains(v, "ERROR") {
			t.Errorf("a picked file that changed %s: verdict %q, want ERROR", c.when, v)
		}
		if !changedFinding {
			t.Errorf("%s: no input.changed finding naming the file and telling the user to pick it again", c.when)
		}
	}
}
