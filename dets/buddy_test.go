package dets

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestBuddyModel runs random allocs and frees against a byte-range model:
// allocations never overlap, free + used blocks tile the area, the lowest
// address of the smallest fitting class is chosen, and the free lists
// survive a serialize/parse round trip.
func TestBuddyModel(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewSource(seed))
	for _, base := range []int64{baseAddr, 5432} {
		b := newBuddy(base)
		type alloc struct{ a, size int64 }
		var live []alloc
		for step := range 5000 {
			if len(live) > 0 && r.Intn(5) < 2 {
				i := r.Intn(len(live))
				b.freeBlock(live[i].a, live[i].size)
				live = slices.Delete(live, i, i+1)
			} else {
				size := int64(1 + r.Intn(1<<uint(4+r.Intn(14))))
				wantClass := buddyClass(size)
				var lowest int64 = -1
				for c := wantClass; c <= maxBuddyClass; c++ {
					if len(b.free[c]) > 0 {
						lowest = int64(b.free[c][0])
						break
					}
				}
				a, err := b.alloc(size)
				must(t, err)
				if a != lowest {
					t.Fatalf("step %d: alloc(%d) = %d, want lowest free %d", step, size, a, lowest)
				}
				live = append(live, alloc{a, size})
			}
			if step%97 == 0 || step == 4999 {
				var all []block
				for _, l := range live {
					all = append(all, block{l.a, pow2ceil(l.size), "used"})
				}
				all = append(all, b.blocks()...)
				slices.SortFunc(all, func(x, y block) int { return cmpInt64(x.addr, y.addr) })
				at := base
				for _, bl := range all {
					if bl.addr != at {
						t.Fatalf("step %d: block %+v, expected one at %d", step, bl, at)
					}
					at += bl.size
				}
				if at != base+1<<31 {
					t.Fatalf("step %d: blocks end at %d", step, at)
				}
				ser := b.appendFreeLists(nil)
				b2, _, msg := parseFreeLists(ser, base)
				if msg != "" {
					t.Fatalf("step %d: parse of serialized lists: %s", step, msg)
				}
				if !slices.EqualFunc(b.free[:], b2.free[:], func(x, y []uint32) bool { return slices.Equal(x, y) }) {
					t.Fatalf("step %d: free lists changed in a round trip", step)
				}
			}
		}
		for _, l := range live {
			b.freeBlock(l.a, l.size)
		}
		// Everything freed coalesces back into one 2 GiB block.
		for c := 1; c < maxBuddyClass; c++ {
			if len(b.free[c]) != 0 {
				t.Fatalf("base %d: class %d still has %v after freeing all", base, c, b.free[c])
			}
		}
		if !slices.Equal(b.free[maxBuddyClass], []uint32{uint32(base)}) {
			t.Fatalf("class 32 = %v", b.free[maxBuddyClass])
		}
	}
}

func TestBuddyLimit(t *testing.T) {
	b := newBuddy(baseAddr)
	total := int64(0)
	for {
		_, err := b.alloc(1 << 26)
		if err != nil {
			if err != ErrFileTooLarge {
				t.Fatal(err)
			}
			break
		}
		total += 1 << 26
	}
	if total+baseAddr > allocLimit || total+baseAddr+1<<26 <= allocLimit {
		t.Fatalf("allocated %d bytes before the limit", total)
	}
}

func TestBuddyFreeListRecords(t *testing.T) {
	b := &buddy{base: baseAddr}
	for i := range 2500 {
		b.free[5] = append(b.free[5], uint32(baseAddr+32*i))
	}
	ser := b.appendFreeLists(nil)
	// 1021 + 1021 + 458 addresses in three records, then the terminator.
	if want := 3*12 + 4*2500 + 12; len(ser) != want {
		t.Fatalf("serialized %d bytes, want %d", len(ser), want)
	}
	if be.Uint32(ser) != 12+4*1021 {
		t.Fatalf("first record size %d", be.Uint32(ser))
	}
	if _, _, msg := parseFreeLists(ser, baseAddr); msg != "" {
		t.Fatal(msg)
	}
}

func TestParseFreeListsErrors(t *testing.T) {
	rec := func(words ...uint32) []byte {
		var b []byte
		for _, w := range words {
			b = be.AppendUint32(b, w)
		}
		return b
	}
	term := rec(12, statusFree, endFree)
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	cases := map[string][]byte{
		"empty":              nil,
		"no terminator":      rec(16, statusFree, 6, 5000),
		"bad status":         cat(rec(16, statusActive, 6, 5000), term),
		"class 0":            cat(rec(16, statusFree, 0, 5000), term),
		"class 33":           cat(rec(16, statusFree, 33, 5000), term),
		"descending class":   cat(rec(16, statusFree, 7, 5000), rec(16, statusFree, 6, 9000), term),
		"size not aligned":   cat(rec(15, statusFree, 6, 5000), term),
		"size past end":      cat(rec(4000, statusFree, 6, 5000), term),
		"not ascending":      cat(rec(20, statusFree, 6, 5000, 5000), term),
		"not ascending 2":    cat(rec(16, statusFree, 6, 5000), rec(16, statusFree, 6, 4000), term),
		"below base":         cat(rec(16, statusFree, 6, 100), term),
		"overlap":            cat(rec(16, statusFree, 6, 5000), rec(16, statusFree, 7, 4990), term),
		"after terminator":   cat(term, rec(1)),
		"short terminator":   rec(12, statusFree),
		"tiny record size":   cat(rec(8, statusFree, 6), term),
		"huge address class": cat(rec(16, statusFree, 32, 5000), rec(16, statusFree, 31, 6000), term),
	}
	for name, area := range cases {
		if _, _, msg := parseFreeLists(area, baseAddr); msg == "" {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(msg, "\n") {
			t.Errorf("%s: multi-line message", name)
		}
	}
	if _, _, msg := parseFreeLists(cat(rec(16, statusFree, 6, 5000), rec(16, statusFree, 6, 5032), term), baseAddr); msg != "" {
		t.Errorf("valid list refused: %s", msg)
	}
}
