// Package chart draws the pages' figures as self-contained SVG strings:
// axes with "nice" ticks (linear: 1, 2 or 5 × 10ᵏ steps; log: decades),
// axis titles with units, a legend, tolerance bands and labelled lines,
// a <title> with the value on every mark (the browser shows it on hover)
// and a caption (<title> and <desc>, role="img"), so that a figure can be
// read without the source code.
//
// It is pure Go over the report types (package report), with fmt,
// strconv, strings and math only: the pages insert the strings with
// app.Raw (cheaper in app.wasm than go-app elements, one per mark), and the
// CLI writes the same SVGs beside its Markdown. Every text that can come
// from a file (a module name, a record id) is escaped, so a string is safe
// as innerHTML.
//
// Colours: the inks of text, lines and marks pass WCAG AA against white
// (4.5:1 for text, 3:1 for marks; TestContrast checks them), and a verdict
// is never carried by colour alone: a failing cell or bar also carries a
// mark (×, or ! for a warning) and says so in its hover text.
package chart
