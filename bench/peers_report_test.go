package bench

import (
	"fmt"
	"strings"
)

// The columns of the peer report, godets' variants first.
var peerColumns = []string{"godets", "godets typed", "godets raw", "OTP", "bbolt", "pogreb", "pebble"}

// peerTarget: godets' figure must be at most Factor times the other's.
type peerTarget struct {
	Says, Workload, Godets, Other string
	Factor                        float64
}

// PeerTargets are issue 22's targets, then the OTP targets from before.
var peerTargets = []peerTarget{
	{"typed Set[string,string] lookup <= pogreb Get", "lookup", "godets typed", "pogreb", 1},
	{"typed traversal <= pebble iterator (per object)", "scan", "godets typed", "pebble", 1},
	{"raw traversal <= 3x bbolt cursor (per object)", "scan", "godets raw", "bbolt", 3},
	{"open of a closed file <= bbolt", "open", "godets", "bbolt", 1},
	{"session insert <= bbolt fsync-per-commit cycle", "session insert", "godets", "bbolt", 1},
	{"insert ahead of pebble", "insert", "godets", "pebble", 1},
	{"session lookup ahead of bbolt", "session lookup", "godets", "bbolt", 1},
	{"insert >= 10x OTP", "insert", "godets", "OTP", 0.1},
	{"lookup >= 10x OTP", "lookup", "godets", "OTP", 0.1},
	{"open >= 10x OTP", "open", "godets", "OTP", 0.1},
	{"scan >= 5x OTP", "scan", "godets", "OTP", 0.2},
}

func cell(f Figure) string {
	var v string
	if f.Unit == "bytes" {
		v = fmt.Sprintf("%.1f MB", f.Median/1e6)
	} else {
		v = ns(f.Median)
	}
	if f.Allocs >= 0 {
		v += fmt.Sprintf(" (%.3g)", f.Allocs)
	}
	return v
}

// printPeers prints one table per size, the rounds of every figure, and
// the targets.
func printPeers(r *Results, systems []System) {
	report("\npeers: %s; %s; %s; medians of %d interleaved rounds\n", r.Date, r.Machine, r.Go, r.Rounds)
	for _, s := range systems {
		report("  %-7s %s\n", s.Name, s.Modes)
	}
	if r.Note != "" {
		report("  %s\n", r.Note)
	}
	for _, n := range r.Sizes() {
		report("\nN=%d (16-byte keys, 100-byte values; sessions: a %d-object table); time (allocs per op or object)\n", n, sessionSize)
		report("%-16s", "workload")
		for _, c := range peerColumns {
			report(" %18s", c)
		}
		report("\n")
		for _, w := range Workloads {
			line, any := fmt.Sprintf("%-16s", w.Name), false
			for _, c := range peerColumns {
				f, ok := r.Find(w.Name, n, c)
				if ok {
					any = true
					line += fmt.Sprintf(" %18s", cell(f))
				} else {
					line += fmt.Sprintf(" %18s", "")
				}
			}
			if any {
				report("%s\n", line)
			}
		}
		for _, w := range Workloads {
			for _, c := range peerColumns {
				if f, ok := r.Find(w.Name, n, c); ok && len(f.Rounds) > 1 {
					report("  %-16s %-13s rounds %s\n", w.Name, c, roundList(f))
				}
			}
		}
	}
	report("\ntargets (godets / other; met when at most the factor)\n")
	for _, tg := range peerTargets {
		for _, n := range r.Sizes() {
			g, ok1 := r.Find(tg.Workload, n, tg.Godets)
			o, ok2 := r.Find(tg.Workload, n, tg.Other)
			if !ok1 || !ok2 {
				continue
			}
			ratio := g.Median / o.Median
			report("  %-50s N=%-8d %10s vs %10s  %6.2f (<= %.2f) %s\n", tg.Says, n, ns(g.Median), ns(o.Median), ratio, tg.Factor, verdict(ratio <= tg.Factor))
		}
	}
}

func roundList(f Figure) string {
	var p []string
	for _, v := range f.Rounds {
		if f.Unit == "bytes" {
			p = append(p, fmt.Sprintf("%.0f B", v))
		} else {
			p = append(p, ns(v))
		}
	}
	return strings.Join(p, " / ")
}
