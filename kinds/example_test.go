package kinds_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/exclusive"
	"github.com/godets/godets/kinds"
)

// The seed's first pattern: a cache of strings in a set, written in one
// session and read in a later one.
func Example_cachedLookup() {
	dir, _ := os.MkdirTemp("", "kinds-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cache.dets")
	opts := exclusive.Options{Repair: dets.AutoRepair, Wait: exclusive.WaitUpTo(time.Second)}

	err := kinds.WithExclusiveSet(path, opts, kinds.String, kinds.String,
		func(table *kinds.Set[string, string]) error {
			return table.Insert("package", "metadata")
		})
	if err != nil {
		fmt.Println("write:", err)
		return
	}

	err = kinds.WithExclusiveSet(path, opts, kinds.String, kinds.String,
		func(table *kinds.Set[string, string]) error {
			for _, key := range []string{"package", "missing"} {
				v, err := table.Lookup(key)
				switch {
				case errors.Is(err, kinds.ErrNotFound):
					fmt.Printf("%s: not cached\n", key)
				case err != nil:
					return err
				default:
					fmt.Printf("%s: %s\n", key, v)
				}
			}
			return nil
		})
	if err != nil {
		fmt.Println("read:", err)
	}
	// Output:
	// package: metadata
	// missing: not cached
}

// The seed's second pattern: read what is cached in one session, fetch the
// rest with no table and no lock held, then store it in a second session.
// Commands that run this at the same time take turns for the file, and
// entries for different keys accumulate: the write session inserts into the
// current table, never a snapshot from the read session.
func Example_twoSessionsAroundFetch() {
	dir, _ := os.MkdirTemp("", "kinds-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cache.dets")
	opts := exclusive.Options{Repair: dets.AutoRepair, Wait: exclusive.WaitUpTo(time.Second)}

	command := func(wanted ...string) error {
		// Session 1: find what is missing.
		var missing []string
		err := kinds.WithExclusiveSet(path, opts, kinds.String, kinds.String,
			func(table *kinds.Set[string, string]) error {
				for _, k := range wanted {
					ok, err := table.Member(k)
					if err != nil {
						return err
					}
					if !ok {
						missing = append(missing, k)
					}
				}
				return nil
			})
		if err != nil {
			return err
		}
		// Slow network work, outside any session.
		fetched := map[string]string{}
		for _, k := range missing {
			fetched[k] = strings.ToUpper(k) + " metadata"
		}
		// Session 2: store the results in the current table.
		return kinds.WithExclusiveSet(path, opts, kinds.String, kinds.String,
			func(table *kinds.Set[string, string]) error {
				for k, v := range fetched {
					if err := table.Insert(k, v); err != nil {
						return err
					}
				}
				return nil
			})
	}
	if err := command("gleam", "slate"); err != nil {
		fmt.Println(err)
		return
	}
	if err := command("slate", "lustre"); err != nil {
		fmt.Println(err)
		return
	}

	err := kinds.WithExclusiveSet(path, opts, kinds.String, kinds.String,
		func(table *kinds.Set[string, string]) error {
			var keys []string
			var err error
			for k, v := range table.All(&err) {
				keys = append(keys, k+"="+v)
			}
			slices.Sort(keys)
			fmt.Println(strings.Join(keys, "\n"))
			return err
		})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// gleam=GLEAM metadata
	// lustre=LUSTRE metadata
	// slate=SLATE metadata
}

// The seed's third pattern: a read-modify-write inside one session, so no
// other process can slip an update in between and have it lost.
func Example_counter() {
	dir, _ := os.MkdirTemp("", "kinds-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "counters.dets")
	opts := exclusive.Options{Repair: dets.AutoRepair, Wait: exclusive.WaitUpTo(time.Second)}

	increment := func() error {
		return kinds.WithExclusiveSet(path, opts, kinds.String, kinds.Int,
			func(table *kinds.Set[string, int64]) error {
				current, err := table.Lookup("count")
				if errors.Is(err, kinds.ErrNotFound) {
					current, err = 0, nil
				}
				if err != nil {
					return err
				}
				return table.Insert("count", current+1)
			})
	}
	for range 3 {
		if err := increment(); err != nil {
			fmt.Println(err)
			return
		}
	}
	_ = kinds.WithExclusiveSet(path, opts, kinds.String, kinds.Int,
		func(table *kinds.Set[string, int64]) error {
			n, err := table.Lookup("count")
			fmt.Println("count:", n, err)
			return nil
		})
	// Output:
	// count: 3 <nil>
}

// A struct stored as an Erlang record, {package, Name, Downloads, Tags}, the
// shape an Erlang program with -record(package, {name, downloads, tags})
// reads and writes.
func ExampleRecord() {
	type Package struct {
		Name      string
		Downloads int64
		Tags      []string
	}
	codec := kinds.Record("package",
		kinds.Field(kinds.String, func(p *Package) *string { return &p.Name }),
		kinds.Field(kinds.Int, func(p *Package) *int64 { return &p.Downloads }),
		kinds.Field(kinds.List(kinds.Atom), func(p *Package) *[]string { return &p.Tags }),
	)
	term, err := codec.Encode(Package{"slate", 1200, []string{"dets", "gleam"}})
	fmt.Println(term, err)

	// A term of another shape is a decode error, never a zero Package.
	bad, _ := kinds.Tuple2(kinds.Atom, kinds.String).Encode(kinds.Pair[string, string]{First: "package", Second: "x"})
	_, err = codec.Decode(bad)
	fmt.Println(err)
	// Output:
	// {package,<<"slate">>,1200,[dets,gleam]} <nil>
	// kinds: expected record "package" (tuple of arity 4), got tuple of arity 2
}

// Rows reports an object that does not decode, for that row alone, and
// goes on: here a download count that an older program stored as text.
// A storage error would end the loop instead.
func ExampleSet_Rows() {
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
	_ = downloads.Insert("gleam", 1200)
	_ = downloads.Insert("lustre", 310)
	_ = tab.Insert(etf.Tuple{etf.Binary("slate"), etf.Binary("many")}) // not an integer

	var lines []string
	for row, err := range downloads.Rows() {
		var bad *kinds.RowError
		if errors.As(err, &bad) {
			lines = append(lines, "skipped: "+err.Error())
			continue
		}
		if err != nil {
			fmt.Println("traversal failed:", err)
			return
		}
		lines = append(lines, fmt.Sprintf("%s: %d", row.Key, row.Value))
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// gleam: 1200
	// lustre: 310
	// skipped: kinds: row with key <<"slate">>: value: expected integer, got binary of 4 bytes
}

// A typed counter refuses a result its codec cannot read back, and the
// stored value stays as it was.
func ExampleSet_UpdateCounter() {
	dir, _ := os.MkdirTemp("", "kinds-example")
	defer os.RemoveAll(dir)
	tab, err := dets.Open(filepath.Join(dir, "hits.dets"), dets.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tab.Close()
	hits, _ := kinds.NewSet(tab, kinds.String, kinds.Integer[uint8]())
	_ = hits.Insert("page", 254)
	fmt.Println(hits.UpdateCounter("page", 1))
	_, err = hits.UpdateCounter("page", 1)
	fmt.Println(errors.Is(err, kinds.ErrOutOfRange), err)
	fmt.Println(hits.Lookup("page"))
	// Output:
	// 255 <nil>
	// true kinds: counter result 256 is out of range: the value codec expects integer in uint8 range; the counter is unchanged
	// 255 <nil>
}
