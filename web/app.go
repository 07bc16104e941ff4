package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// Pages lists the app's routes (for static generation too).
var Pages = []string{"/", "/reconstruct", "/hidden", "/decisions", "/embed", "/codes"}

// Routes registers the pages, each also with a trailing slash: a plain
// file server answers /embed with its folder's index.html, at /embed/.
func Routes() {
	for _, p := range Pages {
		c := func() app.Composer {
			switch p {
			case "/reconstruct":
				return &ReconstructPage{}
			case "/hidden":
				return &HiddenPage{}
			case "/decisions":
				return &DecisionsPage{}
			case "/embed":
				return &DemoPage{}
			case "/codes":
				return &AuditPage{Doc: "codes"}
			}
			return &AuditPage{}
		}
		app.Route(p, c)
		if p != "/" && app.IsClient { // in the browser only: go-app would generate them statically
			app.Route(p+"/", c)
		}
	}
}

// shell lays out a page: header, navigation, content.
func shell(active string, content ...app.UI) app.UI {
	link := func(href, label, id string) app.UI {
		a := app.A().Href(href).Text(label).ID("nav-" + id)
		if id == active {
			a = a.Class("active")
		}
		return a
	}
	return box("page",
		app.Header().Class("top").Body(
			span("brand", "clefcheck"),
			app.Nav().Body(
				link(route("/"), "Audit", "audit"),
				link(route("/reconstruct"), "Reconstruct", "reconstruct"),
				link(route("/hidden"), "Hidden states", "hidden"),
				link(route("/decisions"), "Decisions", "decisions"),
				link(route("/embed"), "Demo", "embed"),
				link(route("/codes"), "Codes", "codes"),
			),
			span("tag", "runs in your browser · nothing is uploaded"),
		),
		app.Main().Body(content...),
	)
}

// rootPrefix is the site's path prefix ("" at the root, "/clefcheck" under
// a sub-path), as go-app passes it to the client.
func rootPrefix() string {
	if !app.IsClient {
		return ""
	}
	return strings.TrimRight(app.Getenv("GOAPP_ROOT_PREFIX"), "/")
}

// route is the href of an app page. When the site is generated statically
// under a prefix, go-app prefixes hrefs on the server side but not in the
// client (go-app issues #1101, #971), so the client adds it.
func route(p string) string { return rootPrefix() + p }

// siteURL is the absolute URL of a file of the site (e.g. demo/...), at the
// root or under the prefix, whatever the current page.
func siteURL(rel string) string {
	u := app.Window().URL()
	if u == nil || u.Host == "" {
		return rel
	}
	base := url.URL{Scheme: u.Scheme, Host: u.Host, Path: rootPrefix() + "/"}
	r, err := url.Parse(rel)
	if err != nil {
		return rel
	}
	return base.ResolveReference(r).String()
}

// pageOrigin is this page's origin (scheme://host[:port]).
func pageOrigin() string {
	if u := app.Window().URL(); u != nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return "ORIGIN"
}

// safeHTTP accepts only http(s) URLs.
func safeHTTP(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("no URL given (an http:// or https:// address)")
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL (give http://host… or https://host…)", clip(strings.TrimSpace(s), 100))
	}
	return u.String(), nil
}

// clip shortens long strings for display.
func clip(s string, n int) string { return report.Clip(s, n) }

// download offers data as a file.
func download(name, mime string, data []byte) {
	u8 := app.Window().Get("Uint8Array").New(len(data))
	app.CopyBytesToJS(u8, data)
	blob := app.Window().Get("Blob").New([]any{u8}, map[string]any{"type": mime})
	href := app.Window().Get("URL").Call("createObjectURL", blob)
	a := app.Window().Get("document").Call("createElement", "a")
	a.Set("href", href)
	a.Set("download", name)
	a.Call("click")
	app.Window().Get("URL").Call("revokeObjectURL", href)
}

// downloads offers a page's report as JSON (made when clicked) and as
// Markdown (made by the engine with the result); jsonID and mdID name the
// buttons, name the files.
func downloads(jsonID, mdID, name string, data func() []byte, md string) app.UI {
	return box("actions",
		button(jsonID, "", "Download JSON", false, func(ctx app.Context, e app.Event) {
			download(name+".json", "application/json", data())
		}),
		button(mdID, "", "Download Markdown", md == "", func(ctx app.Context, e app.Event) {
			download(name+".md", "text/markdown", []byte(md))
		}),
	)
}

// jsonOf is v as indented JSON.
func jsonOf(v any) func() []byte {
	return func() []byte {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return []byte(fmt.Sprintf("{\"error\": %q}", err.Error()))
		}
		return b
	}
}
