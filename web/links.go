package web

import (
	"net/url"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// Deep links: every page's inputs round-trip through its URL query (never
// a token), so that a link opens the page filled in; run=1 starts it.

// linkTo is the absolute URL of page with the query of its non-empty
// key, value pairs.
func linkTo(page string, kv ...string) string {
	u, sep := siteURL(strings.TrimPrefix(page, "/")), "?"
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			u += sep + kv[i] + "=" + url.QueryEscape(kv[i+1])
			sep = "&"
		}
	}
	return u
}

// query is the current page's URL query.
func query(ctx app.Context) url.Values { return ctx.Page().URL().Query() }

// sourceOf reads a source from a query: src (anything hub.Parse reads), or
// repo with rev and path.
func sourceOf(q url.Values) string {
	src := q.Get("src")
	if repo := q.Get("repo"); repo != "" {
		src = repo
		if rev := q.Get("rev"); rev != "" {
			src += "@" + rev
		}
		if p := strings.Trim(q.Get("path"), "/"); p != "" {
			src += "/" + p
		}
	}
	return clip(strings.TrimSpace(src), 2000)
}

// shareLink shows a page's link and copies it: the input holds it to copy
// by hand where the clipboard is refused.
func shareLink(link string, set func(string), now func() string) app.UI {
	return app.Span().Class("share").Body(
		button("copy-link", "", "Copy link", false, func(ctx app.Context, e app.Event) {
			l := now()
			set(l)
			if c := app.Window().Get("navigator").Get("clipboard"); c.Truthy() {
				c.Call("writeText", l)
			}
		}),
		app.If(link != "", func() app.UI { return app.Input().ID("share-link").ReadOnly(true).Value(link) }),
	)
}

// showLink puts link in the address bar (without a navigation).
func showLink(link string) {
	app.Window().Get("history").Call("replaceState", nil, "", link)
}

// The Hub token: in memory for the session, in localStorage only when the
// user asks to remember it; never in a link or a report.
var hubToken string

const tokenKey = "clefcheck.hub-token"

// storedToken is the remembered token ("" if none).
func storedToken() string {
	if !app.IsClient {
		return ""
	}
	v := app.Window().Get("localStorage").Call("getItem", tokenKey)
	if v.Truthy() {
		return v.String()
	}
	return ""
}

// keepToken remembers or forgets the token as asked.
func keepToken(token string, remember bool) {
	hubToken = token
	ls := app.Window().Get("localStorage")
	if remember && token != "" {
		ls.Call("setItem", tokenKey, token)
	} else {
		ls.Call("removeItem", tokenKey)
	}
}

// hubInput is a source input with the Hub's endpoint and token.
func hubInput(src, endpoint string) *jobs.Input {
	return &jobs.Input{URL: strings.TrimSpace(src), Endpoint: strings.TrimSpace(endpoint), Token: hubToken}
}
