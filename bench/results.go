package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Results is the file a peer comparison writes (BENCH_RESULTS, default
// results/peers.json) and cmd/chart draws.
type Results struct {
	Date    string   `json:"date"`    // UTC, when the run started
	Machine string   `json:"machine"` // CPU, cores, OS; filled by the run
	Go      string   `json:"go"`
	OTP     string   `json:"otp,omitempty"`
	Command string   `json:"command"` // what reproduces the run
	Rounds  int      `json:"rounds"`
	Note    string   `json:"note,omitempty"`
	Figures []Figure `json:"figures"`
}

// Figure is one workload at one size on one system: the median over the
// interleaved rounds, and every round.
type Figure struct {
	Workload string    `json:"workload"` // see Workloads
	N        int       `json:"n"`        // objects in the table
	System   string    `json:"system"`   // godets, godets typed, godets raw, OTP, bbolt, pogreb, pebble
	Unit     string    `json:"unit"`     // ns/op, ns/object or bytes
	Median   float64   `json:"median"`
	Rounds   []float64 `json:"rounds"`
	// Allocs is the median of allocations per op (per object where the
	// unit is ns/object); -1 where it is not measured (OTP, file size).
	Allocs float64 `json:"allocs"`
}

// Workloads are the workloads of the peer comparison, in report order.
var Workloads = []struct{ Name, Unit, Says string }{
	{"insert", "ns/object", "create, N single inserts (fast mode), sync, close"},
	{"lookup", "ns/op", "one lookup of a random present key, store open"},
	{"scan", "ns/object", "full traversal, per object"},
	{"open", "ns/op", "open of a closed store (close not timed)"},
	{"open after kill", "ns/op", "open of a store whose writer got SIGKILL (godets: repair)"},
	{"session lookup", "ns/op", "open, 1 lookup, close (godets: exclusive.Do, with the lock); median"},
	{"session insert", "ns/op", "open, 1 durable insert, close (godets: exclusive.With, default Durability); median"},
	{"bag lookup", "ns/op", "lookup of a key holding 4 objects (peers: key‖seq prefix scan)"},
	{"file size", "bytes", "bytes on disk after the insert workload"},
}

// Find returns the figure for workload, n and system.
func (r *Results) Find(workload string, n int, system string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Workload == workload && f.N == n && f.System == system {
			return f, true
		}
	}
	return Figure{}, false
}

// Sizes returns the table sizes in the results, ascending.
func (r *Results) Sizes() []int {
	var ns []int
	for _, f := range r.Figures {
		if !slices.Contains(ns, f.N) {
			ns = append(ns, f.N)
		}
	}
	slices.Sort(ns)
	return ns
}

// Write stores r as indented JSON at path, creating its directory.
func (r *Results) Write(path string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the command's "&&" stays readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ReadResults reads a results file.
func ReadResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	if len(r.Figures) == 0 {
		return nil, fmt.Errorf("bench: %s: no figures", path)
	}
	return &r, nil
}
