package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/bench"
)

func fig(workload string, n int, system string, median float64) bench.Figure {
	return bench.Figure{Workload: workload, N: n, System: system, Unit: "ns/op", Median: median, Rounds: []float64{median}, Allocs: -1}
}

func sample() *bench.Results {
	return &bench.Results{Date: "2026-12-02 12:00 UTC", Machine: "test", Go: "go1.26", Rounds: 1, Figures: []bench.Figure{
		fig("insert", 10000, "godets", 2), fig("insert", 10000, "OTP", 30), fig("insert", 10000, "pebble", 3),
		fig("insert", 100000, "godets", 4), fig("insert", 100000, "bbolt", 1),
		fig("lookup", 100000, "godets", 500), fig("lookup", 100000, "pogreb", 250),
		fig("scan", 100000, "godets", 100), // no other system: no group
		fig("session lookup", 1000, "godets", 10), fig("session lookup", 1000, "bbolt", 15),
	}}
}

func TestGroupsAreOthersOverGodets(t *testing.T) {
	gs := groups(sample(), 100000)
	want := map[string][]float64{
		"insert":                 {math.NaN(), 0.25, math.NaN(), math.NaN()},
		"lookup":                 {math.NaN(), math.NaN(), 0.5, math.NaN()},
		"session lookup\n(N=1k)": {math.NaN(), 1.5, math.NaN(), math.NaN()},
	}
	if len(gs) != len(want) {
		t.Fatalf("got %d groups %+v, want %d", len(gs), gs, len(want))
	}
	for _, g := range gs {
		w, ok := want[g.label]
		if !ok {
			t.Fatalf("unexpected group %q", g.label)
		}
		for i := range w {
			if math.IsNaN(w[i]) != math.IsNaN(g.ratios[i]) || (!math.IsNaN(w[i]) && math.Abs(w[i]-g.ratios[i]) > 1e-12) {
				t.Errorf("%s: %s ratio %v, want %v", g.label, others[i].name, g.ratios[i], w[i])
			}
		}
	}
	gs = groups(sample(), 10000)
	if gs[0].label != "insert" || gs[0].ratios[0] != 15 || gs[0].ratios[3] != 1.5 {
		t.Errorf("N=10k insert group: %+v", gs[0])
	}
}

func TestRunWritesSVG(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "r.json"), filepath.Join(dir, "c.svg")
	if err := sample().Write(in); err != nil {
		t.Fatal(err)
	}
	if err := run(in, out, 0); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("not an SVG: %.80q", b)
	}
	for _, s := range []string{"pogreb", "session lookup", "(N=1k)", "0.25"} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("the SVG lacks %q", s)
		}
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.json")
	if err := sample().Write(in); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{"), 0o644)
	for _, c := range []struct {
		in, out string
		n       int
		says    string
	}{
		{in, filepath.Join(dir, "c.pdf"), 0, ".svg"},
		{in, filepath.Join(dir, "c.svg"), 5, "no figures at N=5"},
		{bad, filepath.Join(dir, "c.svg"), 0, "bad.json"},
		{filepath.Join(dir, "missing.json"), filepath.Join(dir, "c.svg"), 0, "missing.json"},
	} {
		err := run(c.in, c.out, c.n)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("run(%s, %s, %d) = %v, want an error saying %q", filepath.Base(c.in), filepath.Base(c.out), c.n, err, c.says)
		}
	}
}
