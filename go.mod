module github.com/godets/godets

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/dgryski/go-farm v0.0.0-20240924180020-3414d57e47da
	github.com/leanovate/gopter v0.2.11
	golang.org/x/sys v0.50.0
)
