package dets

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/godets/godets/etf"
)

// groupOf builds a key group of candidates whose keys are the given atoms
// (all ok), as the repair scan makes them for one bag key group.
func groupOf(keys ...string) []scanCand {
	cs := make([]scanCand, len(keys))
	for i, k := range keys {
		enc, err := etf.Encode(etf.Atom(k))
		if err != nil {
			panic(err)
		}
		cs[i] = scanCand{off: i, group: 0, ok: true, kenc: enc[1:]}
	}
	return cs
}

// TestGroupRuleMajority: rule 3 keeps the objects of the strict-majority
// key of a group and drops the rest, and drops all when no key has a
// strict majority, wherever the majority's objects stand.
func TestGroupRuleMajority(t *testing.T) {
	for _, c := range []struct {
		keys []string
		kept string // one letter a candidate: k kept, d dropped
	}{
		{[]string{"a", "a", "a"}, "kkk"},
		{[]string{"a", "b", "a"}, "kdk"},
		{[]string{"b", "a", "a"}, "dkk"},
		{[]string{"a", "b", "b", "a", "b"}, "dkkdk"},
		{[]string{"a", "b"}, "dd"},
		{[]string{"a", "b", "c"}, "ddd"},
		{[]string{"a", "a", "b", "b"}, "dddd"},
		{[]string{"a"}, "k"},
	} {
		cs := groupOf(c.keys...)
		new(scanner).groupRule(cs)
		got := ""
		for _, x := range cs {
			got += map[bool]string{true: "k", false: "d"}[x.ok]
		}
		if got != c.kept {
			t.Errorf("keys %v: %s, want %s", c.keys, got, c.kept)
		}
	}
	// A candidate already refused (rule 1) neither votes nor is kept.
	cs := groupOf("a", "b", "a")
	cs[1].ok = false
	new(scanner).groupRule(cs)
	if !cs[0].ok || cs[1].ok || !cs[2].ok {
		t.Errorf("with the second refused: %v %v %v, want kept, refused, kept", cs[0].ok, cs[1].ok, cs[2].ok)
	}
}

// TestGroupRuleLinear: a group of many objects under one key, the common
// bag shape, takes linear time. The rule compared every pair: a repair of
// 40,000 objects under one key took 15 s, of 300,000 more than ten
// minutes. 400,000 candidates pairwise would take hours; linearly they
// take milliseconds, so the bound below is far from either.
func TestGroupRuleLinear(t *testing.T) {
	keys := make([]string, 400_000)
	for i := range keys {
		keys[i] = "k"
	}
	keys[len(keys)/2] = "other" // one stray: the vote and the count both run
	cs := groupOf(keys...)
	start := time.Now()
	new(scanner).groupRule(cs)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("rule 3 over %d candidates took %v", len(cs), took)
	}
	dropped := 0
	for _, c := range cs {
		if !c.ok {
			dropped++
		}
	}
	if dropped != 1 {
		t.Fatalf("%d dropped, want the stray", dropped)
	}
}

// fakeDeepBuckets is 16 copies of an ACTIVE bucket image whose object has
// a key nested deeper than etf.MaxDepth, one at each residue mod 16, so
// that one lies on the repair scan's probe grid wherever it is stored.
func fakeDeepBuckets() []byte {
	obj := []byte{131, 104, 2}
	for range etf.MaxDepth + 1 {
		obj = append(obj, 104, 1)
	}
	obj = append(obj, 97, 0, 97, 1)
	var f []byte
	f = be.AppendUint32(f, uint32(8+4+len(obj)))
	f = be.AppendUint32(f, statusActive)
	f = be.AppendUint32(f, uint32(4+len(obj)))
	f = append(f, obj...)
	stride := len(f)
	for stride%16 != 1 {
		stride++
	}
	out := make([]byte, 16*stride)
	for j := range 16 {
		copy(out[j*stride:], f)
	}
	return out
}

// TestRepairSplitScanIgnoresHelperErrorsBeforeSync: the split scan's
// helper starts in the middle of the file, often inside a live bucket,
// and its findings count only from the first probe the sequential scan
// shares; its errors must too. A bucket image with a too-deep key inside a
// live binary made the split repair of a sound file fail (DeepTermError)
// where the sequential scan, which jumps over the live bucket, repairs it.
// Found by an audit helper.
func TestRepairSplitScanIgnoresHelperErrorsBeforeSync(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the split scan needs two threads")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	tab := mustOpen(t, path, Options{})
	for i := 2; i < 50; i++ {
		must(t, tab.Insert(tup(etf.Int(i), etf.Binary("v"))))
	}
	var big []byte
	for range 8 {
		big = append(big, fakeDeepBuckets()...) // 2.6 MB
	}
	must(t, tab.Insert(tup(etf.Int(1), etf.Binary(big))))
	// A second one as large puts the file's middle inside the first.
	must(t, tab.Insert(tup(etf.Int(0), etf.Binary(make([]byte, len(big))))))
	must(t, tab.Close())
	img, err := os.ReadFile(path)
	must(t, err)
	for _, split := range []bool{false, true} {
		p := filepath.Join(dir, "c.dets")
		must(t, os.WriteFile(p, img, 0o644))
		opts := withTuning(Options{}, func(tn *tuning) { tn.parallelScanMin = 1 << 20 })
		if !split {
			opts = withTuning(Options{}, func(tn *tuning) { tn.parallelScanMin = 1 << 40 })
		}
		st, err := Repair(p, opts, nil)
		if err != nil || st.Objects != 50 {
			t.Fatalf("split=%v: %+v, %v; want the 50 objects", split, st, err)
		}
	}
}

// TestRepairDropsUnreferencedDeepKeys: a bucket image whose key is too
// deep to hash stops a repair only where the slot table names its bucket
// (a real object the repair cannot place); an image in a freed block,
// which anyone who stores a binary can leave there, is dropped and
// counted, and the repair keeps every live object. It made every repair
// of the file fail. A real bucket with such a key is still refused
// (TestDeepKeyRepairRefused). Found by an audit helper.
func TestRepairDropsUnreferencedDeepKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	tab := mustOpen(t, path, Options{})
	must(t, tab.Insert(tup(etf.Int(1), etf.Binary(fakeDeepBuckets()))))
	for i := 2; i < 50; i++ {
		must(t, tab.Insert(tup(etf.Int(i), etf.Binary("v"))))
	}
	must(t, tab.Delete(etf.Int(1))) // its block is freed, the bytes stay
	img, err := os.ReadFile(path)   // what a kill leaves: dirty
	must(t, err)
	must(t, tab.Close())
	dirty := filepath.Join(dir, "dirty.dets")
	must(t, os.WriteFile(dirty, img, 0o644))
	st, err := Repair(dirty, Options{}, nil)
	if err != nil {
		t.Fatalf("repair of a file whose live objects are all plain: %v", err)
	}
	if st.Objects != 48 || st.ObjectsDropped == 0 {
		t.Fatalf("stats %+v, want 48 objects and the images dropped", st)
	}
}
