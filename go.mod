module github.com/kvit-s/clefcheck

go 1.26

require (
	github.com/maxence-charriere/go-app/v10 v10.1.11 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
