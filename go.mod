module github.com/godets/godets

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/dgryski/go-farm v0.0.0-20240924180020-3414d57e47da
	github.com/leanovate/gopter v0.2.11
	github.com/schollz/progressbar/v3 v3.19.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/term v0.44.0 // indirect
)
