package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
)

// scanAll collects All's objects, failing the test on an error.
func scanAll(t testing.TB, tab *Table) []etf.Term {
	t.Helper()
	var out []etf.Term
	for o, err := range tab.All() {
		if err != nil {
			t.Fatalf("All: %v", err)
		}
		out = append(out, o)
	}
	return out
}

// objectPtrs maps each key (as its encoding) to the pointer of its bucket.
func objectPtrs(t testing.TB, tab *Table, objs []etf.Term) map[string]int64 {
	t.Helper()
	tab.mu.Lock()
	defer tab.mu.Unlock()
	m := make(map[string]int64, len(objs))
	for _, o := range objs {
		k, _ := keyOf(o, tab.keyPos)
		e, err := tab.entry(tab.slotFor(tab.hashKey(k)))
		if err != nil || e.size == 0 {
			t.Fatalf("no bucket for key %v: %v", k, err)
		}
		m[encKey(t, k)] = e.ptr
	}
	return m
}

func encKey(t testing.TB, k etf.Term) string {
	b, err := etf.Encode(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAllFileOrder: on tables built by single inserts (scattered buckets),
// All yields exactly the model's objects, in ascending bucket address (one
// window), each bucket's objects together.
func TestAllFileOrder(t *testing.T) { forEachFormat(t, testAllFileOrder) }

func testAllFileOrder(t *testing.T, format Format) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			tab := openT(t, tmpFile(t, "order.dets"), Options{Format: format, Kind: kind})
			m := newModel(kind)
			for range 3000 {
				o := tup(etf.Int(r.Intn(1500)), etf.Int(r.Intn(3)))
				must(t, tab.Insert(o))
				m.Insert(o)
				if r.Intn(10) == 0 {
					k := etf.Int(r.Intn(1500))
					must(t, tab.Delete(k))
					m.Delete(k)
				}
			}
			got := scanAll(t, tab)
			if d := diffTerms(sortTerms(slices.Clone(got)), m.Terms()); d != "" {
				t.Fatalf("All differs from the model: %s", d)
			}
			ptrs := objectPtrs(t, tab, got)
			var last int64
			for i, o := range got {
				k, _ := keyOf(o, 1)
				p := ptrs[encKey(t, k)]
				if p < last {
					t.Fatalf("object %d (%v) in bucket %d after bucket %d: not in file order", i, o, p, last)
				}
				last = p
			}
		})
	}
}

// TestAllWindows: a table with more slots than one slot window, whose
// buckets (some larger than a read) are spread over all of them, is
// traversed completely, in address order (with small windows: across
// many address windows).
func TestAllWindows(t *testing.T) { forScanWindows(t, testAllWindows) }

func testAllWindows(t *testing.T, windows func(Options) Options) {
	tab := openT(t, tmpFile(t, "windows.dets"), windows(Options{Kind: Bag, MinSlots: 4 * scanSlots}))
	want := map[string]int{}
	var all []etf.Term
	for i := range 3000 {
		o := tup(etf.Int(i), bin(fmt.Sprint(i)))
		all = append(all, o)
	}
	// Two keys whose buckets exceed scanRead.
	big := make([]byte, 2048)
	for i := range 2 * scanRead / len(big) {
		all = append(all, tup(bin("big"), etf.Int(i), etf.Binary(big)), tup(bin("big2"), etf.Int(i), etf.Binary(big)))
	}
	for _, o := range all {
		must(t, tab.Insert(o))
		want[encKey(t, o)]++
	}
	if info, _ := tab.Info(); info.NoSlots.Next <= scanSlots {
		t.Fatalf("only %d slots", info.NoSlots.Next)
	}
	got := scanAll(t, tab)
	for _, o := range got {
		want[encKey(t, o)]--
	}
	for k, n := range want {
		if n != 0 {
			t.Fatalf("object %x seen %d times too few", k, n)
		}
	}
	if len(got) != len(all) {
		t.Fatalf("All gave %d objects, want %d", len(got), len(all))
	}
	if tab.lay.tag == tagNative {
		return // native goes by address within each window of scanSlots slots only
	}
	// Nothing changed meanwhile: ascending addresses throughout.
	ptrs := objectPtrs(t, tab, got)
	last := int64(0)
	for _, o := range got {
		k, _ := keyOf(o, 1)
		p := ptrs[encKey(t, k)]
		if p < last {
			t.Fatalf("bucket %d after %d", p, last)
		}
		last = p
	}
}

// TestAllConcurrentChanges: while the loop body (and another goroutine's
// worth of writes, done from the body) moves and rewrites buckets, every
// object present throughout is seen exactly once (the table cannot grow:
// it has more slots than keys).
func TestAllConcurrentChanges(t *testing.T) { forScanWindows(t, testAllConcurrentChanges) }

func testAllConcurrentChanges(t *testing.T, windows func(Options) Options) {
	seed := testSeed(t)
	r := rand.New(rand.NewSource(seed))
	for _, kind := range []Kind{Set, Bag} {
		t.Run(kind.String(), func(t *testing.T) {
			tab := openT(t, tmpFile(t, "conc.dets"), windows(Options{Kind: kind, MinSlots: 8192}))
			stable := map[etf.Int]int{} // key -> times seen
			// About 2 MiB of buckets, so that the scan takes several reads
			// and the churn moves buckets not read yet.
			spad := etf.Binary(make([]byte, 700))
			for i := range 2000 {
				o := tup(etf.Int(i), bin("stable"), spad)
				must(t, tab.Insert(o))
				stable[etf.Int(i)] = 0
			}
			seen := 0
			for o, err := range tab.All() {
				must(t, err)
				if tp := o.(etf.Tuple); string(tp[1].(etf.Binary)) == "stable" {
					stable[tp[0].(etf.Int)]++
				}
				seen++
				// Churn: add and remove objects that share buckets with
				// stable ones, so buckets change size class and move.
				for range 3 {
					k := etf.Int(r.Intn(2000))
					pad := make([]byte, r.Intn(600))
					must(t, tab.Insert(tup(k, bin("churn"), etf.Binary(pad))))
					if kind == Set {
						// A set's insert replaced the stable object:
						// put it back.
						must(t, tab.Insert(tup(k, bin("stable"), spad)))
					} else if r.Intn(2) == 0 {
						must(t, tab.DeleteObject(tup(k, bin("churn"), etf.Binary(pad))))
					}
				}
			}
			if info, _ := tab.Info(); info.NoSlots.Next != 8192 {
				t.Fatalf("table grew to %d slots", info.NoSlots.Next)
			}
			// A set's stable objects are replaced for a while, so only
			// "at most once" holds for them.
			for k, n := range stable {
				if n > 1 || (kind == Bag && n != 1) {
					t.Fatalf("stable object of key %d seen %d times", k, n)
				}
			}
			if seen == 0 {
				t.Fatal("nothing seen")
			}
		})
	}
}

// TestAllGrowth: when the table grows during the loop, every object present
// throughout is seen at least once. Inserts no longer grow a table under a
// traversal (TestTraversalSeesEachObjectOnce), so the body forces growth
// steps: the traversal must cope with the slot count going up, as with
// DeleteAllObjects taking it down.
func TestAllGrowth(t *testing.T) { forScanWindows(t, testAllGrowth) }

// forceGrow adds a segment to tab under its lock, as maybeGrow would when
// no traversal held it back.
func forceGrow(t *testing.T, tab *Table) {
	t.Helper()
	tab.mu.Lock()
	err := tab.beginWrite()
	if err == nil && tab.lay.tag == tagNative {
		err = tab.nativeGrow()
	} else if err == nil {
		err = tab.grow()
	}
	tab.mu.Unlock()
	must(t, err)
}

func testAllGrowth(t *testing.T, windows func(Options) Options) {
	tab := openT(t, tmpFile(t, "grow.dets"), windows(Options{}))
	want := map[string]bool{}
	for i := range 1000 {
		o := tup(etf.Int(i))
		must(t, tab.Insert(o))
		want[encKey(t, o)] = true
	}
	before, _ := tab.Info()
	n := 0
	for o, err := range tab.All() {
		must(t, err)
		delete(want, encKey(t, o))
		if n < 1000 {
			must(t, tab.Insert(tup(etf.Int(100000+n)), tup(etf.Int(200000+n))))
			if n%100 == 0 {
				forceGrow(t, tab)
			}
		}
		n++
	}
	after, _ := tab.Info()
	if after.NoSlots.Next <= before.NoSlots.Next {
		t.Fatalf("the table did not grow: %d slots", after.NoSlots.Next)
	}
	if len(want) != 0 {
		t.Fatalf("%d objects present throughout were not seen", len(want))
	}
}

// TestAllDeleteAllObjects: emptying the table (fewer slots) in the loop
// body ends the traversal cleanly; buckets not read yet are not seen.
func TestAllDeleteAllObjects(t *testing.T) { forScanWindows(t, testAllDeleteAllObjects) }

func testAllDeleteAllObjects(t *testing.T, windows func(Options) Options) {
	tab := openT(t, tmpFile(t, "delall.dets"), windows(Options{MinSlots: 256}))
	const total = 20000 // about 5 MiB of buckets: many reads
	pad := etf.Binary(make([]byte, 100))
	for i := range total {
		must(t, tab.Insert(tup(etf.Int(i), pad)))
	}
	n := 0
	for _, err := range tab.All() {
		must(t, err)
		if n == 10 {
			must(t, tab.DeleteAllObjects())
		}
		n++
	}
	if n >= total {
		t.Fatalf("saw %d objects after DeleteAllObjects", n)
	}
	if got := scanAll(t, tab); len(got) != 0 {
		t.Fatalf("emptied table gave %d objects", len(got))
	}
}

// TestAllBreak: stopping early, then scanning again, works.
func TestAllBreak(t *testing.T) { forEachFormat(t, testAllBreak) }

func testAllBreak(t *testing.T, format Format) {
	tab := openT(t, tmpFile(t, "break.dets"), Options{Format: format})
	for i := range 500 {
		must(t, tab.Insert(tup(etf.Int(i))))
	}
	n := 0
	for range tab.All() {
		if n++; n == 7 {
			break
		}
	}
	if got := scanAll(t, tab); len(got) != 500 {
		t.Fatalf("second scan gave %d objects", len(got))
	}
}

// TestAllCorruptBucket: a bucket whose header disagrees with its slot entry
// (size or status) or whose object does not decode is reported as a
// *CorruptionError, and the table is then in error mode.
//
// otp9-only: it writes otp9 header words (native: TestNativeScanDamaged).
func TestAllCorruptBucket(t *testing.T) {
	cases := []struct {
		name string
		off  int64 // from the bucket start
		val  uint32
	}{
		{"size", 0, 999},
		{"status", 4, statusFree},
		{"object", bucketHeaderSize + 4, 0xFFFFFFFF}, // breaks the version byte
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := tmpFile(t, "corrupt.dets")
			tab, err := Open(path, Options{})
			must(t, err)
			for i := range 3000 {
				must(t, tab.Insert(tup(etf.Int(i), etf.Int(i))))
			}
			tab.mu.Lock()
			e, err := tab.entry(tab.slotFor(keyHash(etf.Int(1234))))
			tab.mu.Unlock()
			must(t, err)
			must(t, tab.Close())
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			must(t, err)
			var b [4]byte
			be.PutUint32(b[:], c.val)
			_, err = f.WriteAt(b[:], int64(e.ptr)+c.off)
			must(t, err)
			must(t, f.Close())

			tab, err = Open(path, Options{ReadOnly: true})
			must(t, err)
			defer tab.Close()
			n := 0
			var got error
			for _, err := range tab.All() {
				if err != nil {
					got = err
					break
				}
				n++
			}
			var ce *CorruptionError
			if !errors.As(got, &ce) || !errors.Is(got, ErrCorrupt) {
				t.Fatalf("All after %d objects: %v, want a *CorruptionError", n, got)
			}
			if ce.Offset < int64(e.ptr) || ce.Offset >= int64(e.ptr+e.size) {
				t.Errorf("error offset %d outside the bucket at %d: %v", ce.Offset, e.ptr, got)
			}
			// A read error belongs to the call that met it (Close docs).
			if objs, err := tab.Lookup(etf.Int(1)); err != nil || len(objs) != 1 {
				t.Errorf("Lookup after the error: %v, %v; want the object", objs, err)
			}
		})
	}
}

// TestAllObjectsOutliveScan: objects from All stay intact after the scan,
// the table's close, and collections that run during the scan and after
// it, while freed memory is reused for garbage. The objects are mostly
// {Binary, Binary}, which the decoder builds from shared chunks, so a few
// kept objects are all that keeps their chunks alive. Seeded: -seed.
func TestAllObjectsOutliveScan(t *testing.T) { forEachFormat(t, testAllObjectsOutliveScan) }

func testAllObjectsOutliveScan(t *testing.T, format Format) {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	r := rand.New(rand.NewSource(testSeed(t)))
	tab, err := Open(tmpFile(t, "outlive.dets"), Options{Format: format})
	must(t, err)
	want := map[string]etf.Term{}
	for i := range 6000 {
		k := make(etf.Binary, 1+r.Intn(24))
		r.Read(k)
		var o etf.Tuple
		switch v := make(etf.Binary, r.Intn(300)); i % 5 {
		case 0:
			o = tup(k, etf.Int(r.Int63()), etf.Atom("a"), v)
		default:
			r.Read(v)
			o = tup(k, v)
		}
		must(t, tab.Insert(o))
		want[encKey(t, k)] = o
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // collect continuously while scanning
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	var kept []etf.Term
	n := 0
	for o, err := range tab.All() {
		must(t, err)
		if n++; n%50 == 0 {
			kept = append(kept, o)
		}
	}
	close(stop)
	<-done
	must(t, tab.Close())
	if n != len(want) {
		t.Fatalf("All gave %d objects, want %d", n, len(want))
	}
	var junk [][]byte
	for range 5 {
		runtime.GC()
		junk = junk[:0]
		for range 2000 {
			junk = append(junk, bytes.Repeat([]byte{0xEE}, 64+r.Intn(4096)))
		}
	}
	runtime.KeepAlive(junk)
	for _, o := range kept {
		k, _ := keyOf(o, 1)
		if w, ok := want[encKey(t, k)]; !ok || !etf.Equal(o, w) {
			t.Fatalf("kept object %v changed after the scan: want %v", o, w)
		}
	}
}

// TestAllCorruptLaterObject: in a set's bucket of several objects, a later
// object that is broken (its size or its encoding) is reported as a
// *CorruptionError at that object, and none of the bucket's objects is
// yielded: a bucket is decoded whole before its objects are.
//
// otp9-only: it writes otp9 record bytes
func TestAllCorruptLaterObject(t *testing.T) {
	cases := []struct {
		name string
		off  int64 // from the second object's start
		val  uint32
	}{
		{"size", 0, 0x7FFFFFFF},
		{"encoding", 4, 0xFFFFFFFF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := tmpFile(t, "later.dets")
			tab, err := Open(path, Options{})
			must(t, err)
			for i := range 3000 {
				must(t, tab.Insert(tup(etf.Binary(fmt.Sprint("k", i)), etf.Binary("value"))))
			}
			// A bucket holding several keys, and those keys.
			tab.mu.Lock()
			bySlot := map[uint64][]string{}
			for i := range 3000 {
				k := fmt.Sprint("k", i)
				s := tab.slotFor(keyHash(etf.Binary(k)))
				bySlot[s] = append(bySlot[s], k)
			}
			var e slotEntry
			var keys []string
			for s, ks := range bySlot {
				if len(ks) >= 2 {
					if e, err = tab.entry(s); err != nil {
						tab.mu.Unlock()
						t.Fatal(err)
					}
					keys = ks
					break
				}
			}
			tab.mu.Unlock()
			if keys == nil {
				t.Fatal("no bucket with two keys")
			}
			must(t, tab.Close())
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			must(t, err)
			defer f.Close()
			var b [4]byte
			_, err = f.ReadAt(b[:], int64(e.ptr)+bucketHeaderSize)
			must(t, err)
			second := int64(e.ptr) + bucketHeaderSize + int64(be.Uint32(b[:]))
			be.PutUint32(b[:], c.val)
			_, err = f.WriteAt(b[:], second+c.off)
			must(t, err)

			tab, err = Open(path, Options{ReadOnly: true})
			must(t, err)
			defer tab.Close()
			seen := map[string]bool{}
			var got error
			for o, err := range tab.All() {
				if err != nil {
					got = err
					break
				}
				k, _ := keyOf(o, 1)
				seen[string(k.(etf.Binary))] = true
			}
			var ce *CorruptionError
			if !errors.As(got, &ce) || !errors.Is(got, ErrCorrupt) {
				t.Fatalf("All after %d objects: %v, want a *CorruptionError", len(seen), got)
			}
			if ce.Offset != second {
				t.Errorf("error offset %d, want the second object's %d: %v", ce.Offset, second, got)
			}
			for _, k := range keys {
				if seen[k] {
					t.Errorf("key %s of the corrupt bucket was yielded", k)
				}
			}
		})
	}
}

// forScanWindows runs a traversal test with the usual address windows and
// with windows of a few dozen buckets, so that small tables take many. The
// test opens its table with windows(its options).
func forScanWindows(t *testing.T, test func(t *testing.T, windows func(Options) Options)) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, format Format) {
		t.Run("windows=default", func(t *testing.T) {
			test(t, func(o Options) Options { o.Format = format; return o })
		})
		if format == Native {
			return // native windows go by slot; scanWindowKeys is otp9's
		}
		t.Run("windows=small", func(t *testing.T) {
			test(t, func(o Options) Options {
				o.Format = format
				return withTuning(o, func(tn *tuning) { tn.scanWindowKeys = 40 })
			})
		})
	})
}

// TestScanSortByPtr: the window sort orders the entries by pointer and
// keeps each one's size beside it, for pointers at multiples of various
// block sizes from an odd base (the radix passes start at the lowest bit
// that varies), small windows (insertion sort) and sorted ones. Seeded:
// -seed.
//
// otp9-only: the packed 32-bit scan entries are otp9's (native_scan.go)
func TestScanSortByPtr(t *testing.T) {
	r := rand.New(rand.NewSource(testSeed(t)))
	sizeOf := func(x uint64) uint32 { return uint32(x*0x9E3779B97F4A7C15>>40) | 1 }
	for _, n := range []int{0, 1, 2, 255, 256, 3000, 70_000} {
		for i, step := range []int64{1, 32, 256, 4096, 1 << 20, 256} {
			presorted := i == 5
			var st scanState
			seen := map[uint64]bool{}
			for len(st.ents) < n {
				ptr := 1336 + step*r.Int63n(min(1<<31/step-1, int64(4*n)+1))
				x := scanPack(uint64(r.Intn(1<<scanSlotBits)), slotEntry{size: 200, ptr: ptr})
				if seen[x] {
					continue
				}
				seen[x] = true
				st.ents = append(st.ents, x)
				st.sizes = append(st.sizes, sizeOf(x))
			}
			want := slices.Clone(st.ents)
			slices.Sort(want)
			if presorted {
				st.ents, st.sizes = slices.Clone(want), nil // already sorted
				for _, x := range want {
					st.sizes = append(st.sizes, sizeOf(x))
				}
			}
			st.sortByPtr()
			for i, x := range st.ents {
				if i > 0 && scanPtr(x) < scanPtr(st.ents[i-1]) {
					t.Fatalf("n=%d step=%d: entry %d pointer %d after %d", n, step, i, scanPtr(x), scanPtr(st.ents[i-1]))
				}
				if st.sizes[i] != sizeOf(x) {
					t.Fatalf("n=%d step=%d: entry %d lost its size", n, step, i)
				}
			}
			got := slices.Clone(st.ents)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d step=%d: the sort changed the entries", n, step)
			}
		}
	}
}

// TestScanPlaceByPtr: placement sorts a window whose entries start at
// distinct blocks, at most twice as many blocks as entries, and keeps each
// entry's size beside it; it declines a sparser window, or one where two
// entries share a block, and leaves the entries as they were. Seeded:
// -seed.
//
// otp9-only: the packed 32-bit scan entries are otp9's (native_scan.go)
func TestScanPlaceByPtr(t *testing.T) {
	r := rand.New(rand.NewSource(testSeed(t)))
	for _, n := range []int{256, 3000, 70_000} {
		for _, c := range []struct {
			name   string
			blocks int
			shared bool
			placed bool
		}{
			{"every block", n, false, true},
			{"dense", n + n/3, false, true},
			{"twice", 2 * n, false, true},
			{"sparse", 2*n + 1, false, false},
			{"shared block", n + n/3, true, false},
		} {
			// The first and the last block always, so that the window
			// spans exactly c.blocks blocks.
			ks := []int{0, c.blocks - 1}
			for _, k := range r.Perm(c.blocks - 2)[:n-2] {
				ks = append(ks, k+1)
			}
			if c.shared {
				ks[2] = ks[3+r.Intn(n-3)]
			}
			r.Shuffle(n, func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
			var st scanState
			for _, k := range ks {
				e := slotEntry{size: int64(k) + 1, ptr: int64(1336 + 256*k)}
				st.ents = append(st.ents, scanPack(uint64(r.Intn(1<<scanSlotBits)), e))
				st.sizes = append(st.sizes, uint32(e.size))
			}
			before := slices.Clone(st.ents)
			hi := uint64(1336 + 256*(c.blocks-1))
			if got := st.placeByPtr(1336, hi, 8); got != c.placed {
				t.Fatalf("n=%d %s: placeByPtr %v, want %v", n, c.name, got, c.placed)
			}
			if !c.placed {
				if !slices.Equal(st.ents, before) {
					t.Fatalf("n=%d %s: declined, but the entries changed", n, c.name)
				}
				continue
			}
			for i, x := range st.ents {
				if i > 0 && scanPtr(x) <= scanPtr(st.ents[i-1]) {
					t.Fatalf("n=%d %s: entry %d pointer %d after %d", n, c.name, i, scanPtr(x), scanPtr(st.ents[i-1]))
				}
				if int64(st.sizes[i]) != (scanPtr(x)-1336)/256+1 {
					t.Fatalf("n=%d %s: entry %d lost its size", n, c.name, i)
				}
			}
			slices.Sort(before)
			if !slices.Equal(st.ents, before) {
				t.Fatalf("n=%d %s: placement changed the entries", n, c.name)
			}
		}
	}
}
