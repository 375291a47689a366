package dets

import "github.com/godets/godets/internal/testhook"

// tuning holds the thresholds at which the engine changes strategy. They
// are choices of this implementation, not of the file format: changing one
// changes speed or memory, never what a file holds. A Table and a repair
// each carry their own copy, taken from Options.tune (defaultTuning when
// that is nil), so that a test reaches a path on a small file by setting
// its own table's thresholds, without changing what other tests that run
// in parallel see.
type tuning struct {
	// repairMemEntries bounds the repair's index held in memory (16
	// bytes an entry); a larger index is sorted externally in
	// PATH.TMP.sort (docs/repair.md §5).
	repairMemEntries int
	// slotOrderTwoLevelMax: up to this many entries, slotOrder sorts in
	// two levels (see there).
	slotOrderTwoLevelMax int
	// parallelBuildMin: a repair's smaller in-memory indexes are built by
	// one goroutine, where the second goroutine's start and the shared
	// end of the file cost more than they save (at 100k objects the split
	// was 0-18% faster in six interleaved runs on a quiet two-core
	// machine).
	parallelBuildMin int
	// parallelScanMin: smaller files are scanned by one goroutine in a
	// repair (runSplit).
	parallelScanMin int64
	// earlySyncBytes is what the repair's writer writes between early
	// fsyncs (2, 4, 8 and 16 MiB measured about the same; asyncWriter).
	earlySyncBytes int64
	// scanWindowKeys is the number of buckets an address window of All is
	// sized for, from the table's average bytes per key (scan.go; scanMax
	// leaves room for a window that holds more): wider windows mean fewer
	// passes over the slot entries, narrower ones less memory.
	scanWindowKeys int64
	// touchMin: in a smaller file the buckets are mostly in the CPU's
	// caches already, and touchBuckets would only add work (2-6% slower
	// inserts at 10k objects, 2.5 MB).
	touchMin int64
	// mapSpan is the length of a table's memory map (mapSpan in mmap.go):
	// a larger file is not mapped, and a mapped file's bytes past it go
	// through pread and pwrite. Tests lower it to take the 32-bit paths
	// on any target.
	mapSpan int
	// nativeBudgetRecords, nativeBudgetPending and nativeBudgetShare are
	// the checkpoint budget of a native epoch
	// (docs/format-native.md §10.3; nativeAfterWrite): it ends by itself after this many log
	// records, which bounds the replay of a recovery, or when the room its
	// writes made pending, with its log's bytes, passes
	// max(nativeBudgetPending, the file / nativeBudgetShare), which bounds
	// what superseded buckets and the log add to the file (space a meta
	// names is not reused within an epoch, §7.3). 1 MiB and
	// a quarter, measured with 10k and 100k bench objects inserted one by
	// one (interleaved, loaded machine): the earlier 8 MiB and a sixteenth
	// left 789 and 264 bytes an object (otp9: 247 and 245), 1 MiB and a
	// quarter 336 and 239 at about the same 100k insert time (22 against 7
	// checkpoints, but the later ones rarer as the file grows); 256 KiB
	// and an eighth gave 264 and 200 but took the 100k insert from 2.0 s
	// to 3.8 s (each checkpoint's two fsyncs).
	nativeBudgetRecords int
	nativeBudgetPending uint64
	nativeBudgetShare   uint64
	// noTailCompaction leaves the holes of copy-on-write in the file, as
	// OTP's files have them (compact.go); only tests set it.
	noTailCompaction bool
	// otp9SizeLimit is where a file converted to otp9 must end (otp9's
	// 2 GiB, allocLimit); tests lower it to reach the refusal with small
	// tables.
	otp9SizeLimit int64
	// noSplitInPlace makes a split parse every bucket it moves, never
	// hashing one-object buckets in place (grow.go); only tests set it,
	// to compare the two paths.
	noSplitInPlace bool
	// nativeRevision, when not 0, is the revision a new native file gets
	// instead of the current one; only tests set it, to write revision 1
	// files and show that they still open, recover and repair.
	nativeRevision uint32
	// statsExactCells bounds the hash cells with which Stats works out a
	// native CompactedSize key by key (stats_native.go); tests lower it
	// to reach the estimate from the buckets as they are.
	statsExactCells uint64

	// Test hooks, nil in production: they count what leaves no trace in
	// the file.
	blockMoved func() // compactTail moved a block down
	buildSplit func() // a repair's build ran on two goroutines
	// splitInPlace: a split hashed these one-object buckets in place.
	splitInPlace func(*splitHashes)
}

// defaultTuning is the tuning in force unless a test sets another.
var defaultTuning = tuning{
	repairMemEntries:     repairMemEntriesMax,
	slotOrderTwoLevelMax: repairMemEntriesMax / 2,
	parallelBuildMin:     1 << 16,
	parallelScanMin:      4 << 20,
	earlySyncBytes:       4 << 20,
	scanWindowKeys:       scanSlots,
	touchMin:             8 << 20,
	mapSpan:              mapSpan,
	nativeBudgetRecords:  1 << 16,
	nativeBudgetPending:  1 << 20,
	nativeBudgetShare:    4,
	otp9SizeLimit:        allocLimit,
	statsExactCells:      rebuildExactCells,
}

// repairMemEntriesMax is the default bound of the repair's in-memory index:
// 2Mi entries, 32 MiB.
const repairMemEntriesMax = 2 << 20

// tuned returns the tuning in force for o.
func (o *Options) tuned() tuning {
	if o.tune != nil {
		return *o.tune
	}
	if n := testhook.RepairMemEntries; n > 0 {
		t := defaultTuning
		t.repairMemEntries = n
		return t
	}
	return defaultTuning
}
