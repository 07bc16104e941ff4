module github.com/kvit-s/clefcheck

go 1.26

require (
	github.com/chromedp/chromedp v0.23.1
	github.com/maxence-charriere/go-app/v10 v10.1.11
	github.com/x448/float16 v0.8.4
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/chromedp/cdproto v0.160.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/uuid v1.6.0 // indirect
)
