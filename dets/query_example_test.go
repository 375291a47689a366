package dets_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

// A match specification with a guard, written in Erlang syntax as an
// Erlang program would pass it to dets:select/2: the names of the users
// older than 30.
func ExampleTable_Select() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tab, err := dets.Open(filepath.Join(dir, "users.dets"), dets.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer tab.Close()
	for _, u := range []etf.Term{
		etf.Tuple{etf.Atom("ann"), etf.Int(34), etf.Atom("admin")},
		etf.Tuple{etf.Atom("bob"), etf.Int(25), etf.Atom("user")},
		etf.Tuple{etf.Atom("cy"), etf.Int(41), etf.Atom("user")},
	} {
		if err := tab.Insert(u); err != nil {
			log.Fatal(err)
		}
	}

	ms, err := etf.Parse(`[{{'$1', '$2', '_'}, [{'>', '$2', 30}], ['$1']}]`)
	if err != nil {
		log.Fatal(err)
	}
	names, err := tab.Select(ms)
	if err != nil {
		log.Fatal(err)
	}
	slices.SortFunc(names, etf.Compare) // results come in table order
	fmt.Println(names)
	// Output: [ann cy]
}
