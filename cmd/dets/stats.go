package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"

	"github.com/godets/godets/dets"
)

var statsCmd = &command{
	name:    "stats",
	summary: "print the shape of a table: load, bucket and free-space histograms",
	usage:   "dets stats [--json] [--wait D] [--repair MODE] FILE",
	help: `Walks the slot table, every bucket and the free lists once and prints:
  - objects, keys and slots, and the slots that hold a bucket;
  - the load factor (keys per slot) and how it compares with OTP's growth
    rule: OTP adds slots while there are more keys than slots, up to the
    maximum, so a load factor above 1 below the maximum means the next
    write grows the table;
  - a histogram of buckets by objects per bucket (empty slots first);
  - buckets and free blocks by buddy size class (block sizes are powers of
    two), the free bytes and the fragmentation (free bytes / file size:
    what 'dets compact' would give back, roughly);
  - the largest object (bytes of its term_to_binary encoding) and the
    share of the objects' bytes that are keys and values.
On a terminal the histograms are drawn as bars.

--json prints one JSON object with the same numbers: objects, keys, slots
{min, current, max}, buckets, load_factor, growth_due, bucket_objects
[{min, max, count}], bucket_classes and free_classes [{block_size, count,
bytes}], file_size, free_bytes, fragmentation, block_bytes, bucket_bytes,
largest_object {bytes, slot}, key_bytes, value_bytes.

` + jsonErrorHelp,
	example: `  dets stats /var/lib/app/cache.dets
  dets stats --json cache.dets | jq .fragmentation`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		asJSON := fs.Bool("json", false, "print JSON instead of text, and report a failure as JSON on stderr")
		c.jsonErrors = func() bool { return *asJSON }
		return func(args []string) error {
			if err := exactArgs("stats", args, 1, 1, "FILE"); err != nil {
				return err
			}
			return c.stats(args[0], *asJSON)
		}
	},
}

// statsJSON is stats --json; the names are part of the contract.
type statsJSON struct {
	File          string      `json:"file"`
	Objects       int64       `json:"objects"`
	Keys          int64       `json:"keys"`
	Slots         slotsInfo   `json:"slots"`
	Buckets       int64       `json:"buckets"`
	LoadFactor    float64     `json:"load_factor"`
	GrowthDue     bool        `json:"growth_due"`
	BucketObjects []binJSON   `json:"bucket_objects"`
	BucketClasses []classJSON `json:"bucket_classes"`
	FreeClasses   []classJSON `json:"free_classes"`
	FileSize      int64       `json:"file_size"`
	FreeBytes     int64       `json:"free_bytes"`
	Fragmentation float64     `json:"fragmentation"`
	BlockBytes    int64       `json:"block_bytes"`
	BucketBytes   int64       `json:"bucket_bytes"`
	Largest       largestJSON `json:"largest_object"`
	KeyBytes      int64       `json:"key_bytes"`
	ValueBytes    int64       `json:"value_bytes"`
}

type binJSON struct {
	Min   int64 `json:"min"`
	Max   int64 `json:"max"`
	Count int64 `json:"count"`
}

type classJSON struct {
	BlockSize int64 `json:"block_size"`
	Count     int64 `json:"count"`
	Bytes     int64 `json:"bytes"`
}

type largestJSON struct {
	Bytes int64 `json:"bytes"`
	Slot  int64 `json:"slot"`
}

func (c *cmdCtx) stats(path string, asJSON bool) error {
	if err := existing(path); err != nil {
		return err
	}
	var st dets.Stats
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		var err error
		st, err = t.Stats()
		return err
	})
	if err != nil {
		return err
	}
	if sz, err := fileSize(path); err == nil {
		st.FileSize = sz
	}
	if asJSON {
		b, err := json.MarshalIndent(toStatsJSON(path, st), "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s\n", b)
		return nil
	}
	fmt.Fprint(c.stdout, formatStats(path, st, c.stdoutTTY))
	return nil
}

func toStatsJSON(path string, st dets.Stats) statsJSON {
	j := statsJSON{
		File: path, Objects: st.Objects, Keys: st.Keys,
		Slots:   slotsInfo{Min: int64(st.Slots.Min), Current: int64(st.Slots.Next), Max: int64(st.Slots.Max)},
		Buckets: st.Buckets, LoadFactor: st.LoadFactor, GrowthDue: st.GrowthDue,
		BucketObjects: []binJSON{}, BucketClasses: []classJSON{}, FreeClasses: []classJSON{},
		FileSize: st.FileSize, FreeBytes: st.FreeBytes, Fragmentation: st.Fragmentation,
		BlockBytes: st.BlockBytes, BucketBytes: st.BucketBytes,
		Largest:  largestJSON{Bytes: st.LargestObject, Slot: st.LargestObjectSlot},
		KeyBytes: st.KeyBytes, ValueBytes: st.ValueBytes,
	}
	for _, b := range st.BucketObjects {
		j.BucketObjects = append(j.BucketObjects, binJSON(b))
	}
	for _, s := range st.BucketClasses {
		j.BucketClasses = append(j.BucketClasses, classJSON(s))
	}
	for _, s := range st.FreeClasses {
		j.FreeClasses = append(j.FreeClasses, classJSON(s))
	}
	return j
}

// growthVerdict compares the load factor with OTP's growth rule.
func growthVerdict(st dets.Stats) string {
	switch {
	case st.GrowthDue:
		return "above 1: the next write grows the table (OTP keeps slots >= keys)"
	case st.Keys > int64(st.Slots.Next):
		return "above 1 at the maximum slot count: the table cannot grow further"
	}
	return "within OTP's rule (slots >= keys)"
}

func formatStats(path string, st dets.Stats, bars bool) string {
	var b strings.Builder
	row := func(k, format string, args ...any) {
		fmt.Fprintf(&b, "%-16s %s\n", k+":", fmt.Sprintf(format, args...))
	}
	pct := func(part, whole int64) float64 {
		if whole == 0 {
			return 0
		}
		return 100 * float64(part) / float64(whole)
	}
	row("file", "%s", shown(path))
	row("objects", "%d", st.Objects)
	row("keys", "%d", st.Keys)
	row("slots", "%d (min %d, max %d), %d hold a bucket", st.Slots.Next, st.Slots.Min, st.Slots.Max, st.Buckets)
	row("load factor", "%.3f keys per slot, %s", st.LoadFactor, growthVerdict(st))
	row("file size", "%d bytes", st.FileSize)
	row("buckets", "%d bytes in %d bytes of blocks (%.1f%% used)", st.BucketBytes, st.BlockBytes, pct(st.BucketBytes, st.BlockBytes))
	row("free space", "%d bytes, fragmentation %.1f%% of the file", st.FreeBytes, 100*st.Fragmentation)
	row("largest object", "%d bytes (slot %d)", st.LargestObject, st.LargestObjectSlot)
	row("key bytes", "%d (%.1f%%)", st.KeyBytes, pct(st.KeyBytes, st.KeyBytes+st.ValueBytes))
	row("value bytes", "%d (%.1f%%)", st.ValueBytes, pct(st.ValueBytes, st.KeyBytes+st.ValueBytes))

	var labels []string
	var counts []int64
	for _, bin := range st.BucketObjects {
		if bin.Min == bin.Max {
			labels = append(labels, fmt.Sprint(bin.Min))
		} else {
			labels = append(labels, fmt.Sprintf("%d-%d", bin.Min, bin.Max))
		}
		counts = append(counts, bin.Count)
	}
	b.WriteString("\nobjects per bucket (slots):\n")
	histogramRows(&b, labels, counts, nil, bars)
	classRows := func(title string, cs []dets.SizeClass) {
		fmt.Fprintf(&b, "\n%s:\n", title)
		if len(cs) == 0 {
			b.WriteString("  none\n")
			return
		}
		labels, counts = labels[:0], counts[:0]
		var bytes []int64
		for _, s := range cs {
			labels = append(labels, sizeLabel(s.BlockSize))
			counts = append(counts, s.Count)
			bytes = append(bytes, s.Bytes)
		}
		histogramRows(&b, labels, counts, bytes, bars)
	}
	classRows("buckets by block size", st.BucketClasses)
	classRows("free blocks by block size", st.FreeClasses)
	return b.String()
}

// histogramRows writes one row per bin: label, count, optional bytes, and
// on a terminal a bar scaled to the largest count.
func histogramRows(b *strings.Builder, labels []string, counts, bytes []int64, bars bool) {
	const width = 40
	var top int64
	for _, n := range counts {
		top = max(top, n)
	}
	for i, l := range labels {
		fmt.Fprintf(b, "  %8s %10d", l, counts[i])
		if bytes != nil {
			fmt.Fprintf(b, " %12d bytes", bytes[i])
		}
		if bars && top > 0 {
			n := int(counts[i] * width / top)
			if n == 0 && counts[i] > 0 {
				n = 1
			}
			b.WriteString("  " + strings.Repeat("█", n))
		}
		b.WriteString("\n")
	}
}

func sizeLabel(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}
