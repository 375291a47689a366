package kinds_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/kinds"
)

// Select filters the typed traversal with a Go predicate: here the
// packages of one author with more than a thousand downloads.
func ExampleSet_Select() {
	dir, _ := os.MkdirTemp("", "kinds-example")
	defer os.RemoveAll(dir)
	tab, err := dets.Open(filepath.Join(dir, "downloads.dets"), dets.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tab.Close()
	downloads, err := kinds.NewSet(tab, kinds.String, kinds.Int)
	if err != nil {
		fmt.Println(err)
		return
	}
	for name, n := range map[string]int64{"lpil/gleam_json": 5400, "lpil/wisp": 800, "lpil/lustre": 2100, "other/slate": 9000} {
		if err := downloads.Insert(name, n); err != nil {
			fmt.Println(err)
			return
		}
	}

	popular, err := downloads.Select(func(name string, n int64) bool {
		return strings.HasPrefix(name, "lpil/") && n > 1000
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var names []string
	for _, row := range popular {
		names = append(names, row.Key) // storage order: sort to show
	}
	slices.Sort(names)
	fmt.Println(strings.Join(names, ", "))

	// The iterator form stops at the first error, which it stores in err.
	var total int64
	for _, n := range downloads.SelectSeq(func(name string, _ int64) bool { return strings.HasPrefix(name, "lpil/") }, &err) {
		total += n
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(total, "downloads of lpil's packages")
	// Output:
	// lpil/gleam_json, lpil/lustre
	// 8300 downloads of lpil's packages
}
