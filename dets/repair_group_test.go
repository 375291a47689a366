package dets

import (
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
