package dets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
)

// Repair rebuilds the table file at path unconditionally, as a ForceRepair
// open would, and reports what it found. Unlike Open it also works when the
// header itself is damaged, provided opts.Kind and opts.KeyPos say what the
// table was; a file in which that finds no object at all is refused with
// ErrNotDETS rather than turned into an empty table. progress, if not nil,
// is called as the scan and the rebuild advance. The caller must hold the
// file exclusively (package exclusive); a file open in this process is
// refused with ErrAlreadyOpen.
//
// # Stages
//
// Every repair (this one, Open's with AutoRepair, and the compaction of
// ForceRepair) runs five stages; docs/repair.md describes each in the
// section given:
//
//	scan     find every object proven whole (below) in the old file, mapped
//	         read-only, without trusting the header's counts, the slot
//	         table or the free lists (of a file closed properly, only in
//	         the buckets its slot table names, §9); index each by {offset,
//	         length, key hash} and count the distinct keys with a sketch (§2)
//	size     Next, the new slot count: the distinct keys rounded up to a
//	         multiple of 256, within MinNoSlots and MaxNoSlots, which stay as
//	         the header or the options give them (§4)
//	sort     the index by (new slot, file offset): in memory, or merged
//	         through PATH.TMP.sort when it is large (§5)
//	build    per slot, the kind's insert rule over its objects in file
//	         order (§3), and the buckets, segments, parts, free lists and a
//	         closed header written into PATH.TMP, which is fsynced (§6)
//	replace  rename PATH.TMP over PATH, then fsync the directory (§7)
//
// The old file is never written. A crash before the rename leaves it as it
// was, and the next repair starts again (reusing a stale PATH.TMP, removing
// a stale PATH.TMP.sort); a crash after it leaves the new, closed file. A
// failed repair removes PATH.TMP and PATH.TMP.sort. A page of the old file that cannot be read (an I/O error,
// a sparse file on a full file system, a file cut short meanwhile) fails the
// repair with a *MapFaultError, wrapping syscall.ENOSPC when the file system
// is full, instead of killing the process.
//
// # Proven whole
//
// OTP drops a bucket in which one object does not decode, and with it
// every key of its slot. Repair keeps each object it can prove whole, which
// means all of (§2):
//
//  1. its length word and its bytes agree: they decode as exactly one
//     term, a tuple of at least KeyPos elements, that ends where the length
//     says;
//  2. its start is confirmed: every object before it in the bucket is
//     proven whole, or the length words of the whole bucket (and of its key
//     groups, in a bag) tile the body exactly;
//  3. in a bag or duplicate_bag key group, its key is that of the strict
//     majority of the group's proven objects;
//  4. the low 8 bits of its key's phash2 agree with the strict majority of
//     the bucket's proven objects, as the keys of one slot all do;
//  5. its end is confirmed: the bucket's framing tiles, or an object that
//     rule 1 proves follows it.
//
// otp9 objects carry no checksum: a change inside an object that still
// decodes to a term of the same length is kept as it now reads.
// RepairStats.ObjectsDropped counts the framed objects the rules reject.
//
// # Native files
//
// A native file is rebuilt as native (docs/repair.md §11): the log after
// its current meta is applied first, then the tree is walked and every
// object record checked on its own, so that exactly the objects whose
// checksum, framing or key fails are dropped (ObjectsChecksumFailed); the
// slots under a tree node that fails, or the whole file when no meta is
// valid, come from a raw scan in which each key's newest bucket wins
// (NodesDamaged, Ambiguous).
//
// # Memory
//
// The objects never live on the Go heap: they stay in the map of the old
// file (where there is no mmap, the file is read whole). The heap holds the
// index, 16 bytes an object up to 2Mi objects (32 MiB); a larger index
// spills to PATH.TMP.sort, is sorted there in runs of that size and merged
// through buffers of 4096 entries, so a repair's memory is bounded whatever
// the file's size (RepairStats.ExternalSort says when this happened). The
// in-memory sort replaces the index by the objects' offsets in slot order
// (4 bytes an object) and the slots' ends (4 bytes a slot) before the build
// starts; up to 1Mi objects it holds 8 more bytes an object while it runs.
// The build holds one slot's objects per goroutine, as slices of the map,
// and the write buffers of at most 256 KiB each that the writer goroutine
// has not written yet (§5, §6).
func Repair(path string, opts Options, progress func(RepairProgress)) (RepairStats, error) {
	if err := opts.validate(); err != nil {
		return RepairStats{}, err
	}
	c, err := claimPath(opts.FS, path)
	if err != nil {
		return RepairStats{}, err
	}
	defer c.release()
	return repairTable(paramsFor(path, opts, progress))
}

// RepairProgress reports the progress of a repair to Options.Progress.
type RepairProgress struct {
	// Phase is "scan" while the old file is read, then "write".
	Phase string
	// BytesScanned of BytesTotal (the old file's size) have been scanned.
	BytesScanned, BytesTotal int64
	// Objects found so far (scan) or written so far (write).
	Objects int64
}

// RepairStats summarizes a finished repair.
type RepairStats struct {
	ObjectsFound   int64 // objects proven whole by the scan
	ObjectsDropped int64 // framed objects the scan rejected
	BucketsPartial int64 // buckets from which only some objects were kept
	// ObjectsChecksumFailed counts, of a native file, the dropped object
	// records whose framing or checksum failed (the rest of
	// ObjectsDropped passed it but held no sound object, or a key of
	// another slot). Always 0 for otp9, whose objects have no checksum.
	ObjectsChecksumFailed int64
	// NodesDamaged counts the native tree nodes (root, parts, segments)
	// that failed their checksums; their slots came from the raw scan.
	NodesDamaged int64
	// Ambiguous counts the native objects found outside any bucket header
	// that the raw scan left out because a bucket speaks for their key
	// (docs/format-native.md §12.3): they may be the newest version of a
	// key whose newest bucket lost its header.
	Ambiguous     int64
	Objects, Keys int64 // in the new file, after the kind rules
	Slots         int64 // Next of the new file
	ExternalSort  bool  // the index spilled to PATH.TMP.sort
}

// repairParams says what to rebuild.
type repairParams struct {
	fs           FS
	path         string
	wantKind     Kind   // 0: from the header
	wantKeyPos   int    // 0: from the header
	wantMinSlots uint32 // 0: from the header, else 256
	wantMaxSlots uint32 // 0: from the header, else 32Mi
	natMin       uint64 // native: Options.MinSlots as native bounds; 0: from the superblock
	natMax       uint64
	progress     func(RepairProgress)
	tune         tuning
	// nativeBase, when not 0, is the buddy base of the native file the
	// repair builds, in place of the old superblock's: a test's way to a
	// legal sparse file with every block above 4 GiB (TestNativeBeyond4GiB).
	nativeBase uint64
}

// repairPlan is one repair on its way through the stages of docs/repair.md:
// each stage reads what the earlier ones decided and records its own
// decisions here, so that repairTable is the pipeline and nothing else.
type repairPlan struct {
	repairParams

	// The old file (openOld), read-only: mapped where the platform can
	// map it, else read whole. Every read of data runs under guard
	// (repair_fault.go); guard is nil when data is not a map.
	src     File
	srcOpen bool
	size    int64
	data    []byte
	unmap   func() error
	guard   *mapGuard

	// shape: what the table is, from a trustworthy header or the options.
	kind               Kind
	keyPos             int
	minSlots, maxSlots uint32
	maxBucket          int64 // the largest plausible bucket
	trusted            bool  // the header passed its checks
	hint               int64 // the header's object count, bounded by the file; 0: none

	// scan: the proven objects' index and their keys' sketch.
	idx    *entryIndex
	sketch hll

	// sizeSlots: the new table's slot count Next = m + n.
	next int64
	m, n uint32

	// sort: the index in (new slot, offset) order.
	order entryIter

	// build: the new file's name; it exists from the build until replace
	// renames it.
	tmp string

	stats RepairStats

	// nat is set for a native file (native_repair.go), which takes its
	// own shape, scan, sizing and build stages.
	nat *nativeRepair
}

func tmpPath(path string) string  { return path + ".TMP" }
func sortPath(path string) string { return path + ".TMP.sort" }

// createFresh creates path as a new file, removing what was there first: a
// stale file of an earlier run goes, and a link planted at the name is
// removed, never followed (O_EXCL), so that a repair cannot truncate the
// table itself (a hard link) or another file (a symlink) through it.
func createFresh(fsys FS, path string, perm fs.FileMode) (File, error) {
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
}

// repairTable rebuilds params.path in place: the pipeline of Repair's doc.
// It returns the stats so far also when a stage fails.
//
// Speed: on a large file the scan runs on two goroutines (runSplit), and so
// does the build of a large in-memory index (two halves of the slots, see
// tableWriter). The build encodes buckets straight into write buffers that
// another goroutine writes, asking the kernel to start writeback of each
// (Linux), while a third fsyncs every few MiB (asyncWriter), so the fsync
// before the rename has little left; the replaced file is closed after the
// rename, off the caller's path.
func repairTable(params repairParams) (RepairStats, error) {
	p := &repairPlan{repairParams: params}
	defer p.release()
	err := p.openOld()
	if err == nil && p.nat != nil {
		return p.stats, p.nativeStages()
	}
	if err == nil {
		err = p.guard.run(p.shape)
	}
	if err == nil {
		err = p.scan()
	}
	if err == nil {
		p.sizeSlots()
		err = p.sort()
	}
	if err == nil {
		err = p.build()
	}
	if err == nil {
		err = p.replace()
	}
	return p.stats, err
}

// release gives back what a failed or finished repair still holds: the
// spill file, the map and the old file's descriptor.
func (p *repairPlan) release() {
	if p.idx != nil {
		p.idx.cleanup()
	}
	if p.fs != nil {
		// A killed repair's spill file, which this one did not reuse.
		p.fs.Remove(sortPath(p.path))
	}
	if p.unmap != nil {
		p.unmap()
		p.unmap = nil
	}
	if p.srcOpen {
		p.srcOpen = false
		p.src.Close()
	}
}

// openOld opens and maps the old file; a file beyond 4 GiB cannot be otp9.
// A native file (NAT1 at offset 16) gets p.nat, and the native stages.
func (p *repairPlan) openOld() error {
	if p.fs == nil {
		p.fs = OSFS{}
	}
	src, err := p.fs.OpenFile(p.path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	p.src, p.srcOpen = src, true
	if p.size, err = src.Size(); err != nil {
		return err
	}
	var head [nsOffVersion + 4]byte
	if p.size >= int64(len(head)) {
		if err := readFull(src, head[:], 0); err != nil {
			return err
		}
	}
	if isNativeFile(head[:]) {
		p.nat = &nativeRepair{}
	} else if p.size > 1<<32 {
		return fmt.Errorf("%w: %s: %d bytes is beyond the otp9 format", ErrNotDETS, p.path, p.size)
	}
	if p.data, p.unmap, err = mapRepairSource(src, p.size); err != nil {
		return err
	}
	if p.unmap != nil {
		p.guard = &mapGuard{data: p.data, src: src, path: p.path}
	}
	return nil
}

// shape decides the kind, key position, slot bounds and largest plausible
// bucket of the table (docs/repair.md §4, §8). The header is trusted for
// kind and key position when its cookie, type, version, MD5 and key
// position are right; otherwise the options must give them.
func (p *repairPlan) shape() error {
	data := p.data
	p.maxBucket = min(p.size, 1<<31)
	var h header
	if p.size >= headerSize {
		h = decodeHeader(data[:headerSize])
		p.trusted = h.cookie == cookie && h.version == formatVersion &&
			h.typ >= typeSet && h.typ <= typeDuplicateBag && md5OK(data[:headerSize]) &&
			h.keyPos >= 1 && h.keyPos <= 1<<24
	}
	if p.trusted {
		p.kind, p.keyPos = Kind(h.typ), int(h.keyPos)
		if p.wantKind != 0 && p.wantKind != p.kind {
			return openError(ErrKindMismatch, p.path)
		}
		if p.wantKeyPos != 0 && p.wantKeyPos != p.keyPos {
			return openError(ErrKeyPosMismatch, p.path)
		}
		// OTP also bounds a bucket by the header's largest size class. In a
		// dirty file those counters can be older than the buckets, so OTP
		// then drops every bucket that grew past them; we bound by the file
		// size only.
		p.hint = min(int64(h.noObjects), p.size/16)
	} else {
		if p.wantKind == 0 || p.wantKeyPos == 0 {
			return fmt.Errorf("%w: %s: the header is damaged; give Options.Kind and Options.KeyPos to repair it", ErrCorrupt, p.path)
		}
		p.kind, p.keyPos = p.wantKind, p.wantKeyPos
	}
	isPow2 := func(v uint64) bool { return v != 0 && v&(v-1) == 0 }
	minS, maxS := uint32(defaultMinSlots), uint32(defaultMaxSlots)
	if p.trusted && isPow2(h.minSlots) && isPow2(h.maxSlots) && h.minSlots >= slotsPerSeg &&
		h.maxSlots <= maxSlotsLimit && h.minSlots <= h.maxSlots {
		minS, maxS = uint32(h.minSlots), uint32(h.maxSlots) // at most maxSlotsLimit
	}
	if p.wantMinSlots != 0 {
		minS = p.wantMinSlots
	}
	if p.wantMaxSlots != 0 {
		maxS = p.wantMaxSlots
	}
	if minS > maxS {
		return fmt.Errorf("%w: min slots %d above max slots %d", ErrInvalidOptions, minS, maxS)
	}
	p.minSlots, p.maxSlots = minS, maxS
	return nil
}

// scan finds every object proven whole and adds it to the index and its
// key's hash to the sketch (docs/repair.md §2). A damaged header and no
// object found mean nothing proves the file was ever such a table.
//
// A file that was closed properly (a compaction) keeps only the buckets
// its slot table names, as OTP's compaction does (§9). When the scan did
// not meet exactly those buckets, each at its entry's size, and as many
// as the header counts, the table is not right (damage), and the file is
// scanned again whole, as OTP falls back to a repair (the progress of the
// scan then starts again from 0).
func (p *repairPlan) scan() error {
	var refs, named *slotRefs
	var buckets int64
	if p.trusted {
		// A key too deep to hash stops the repair only in a bucket that
		// the slot table names (scanner.deepKey).
		refs = &slotRefs{data: p.data}
		var closed bool
		if buckets, closed = closedBuckets(p.data); closed {
			named = refs
		}
	}
	sc, err := p.scanWith(refs, named, nil)
	if err == nil && named != nil {
		var met bool
		err = p.guard.run(func() error {
			entries, sum := named.tally()
			met = entries == buckets && sc.stats.named == entries && sc.stats.namedSum == sum
			return nil
		})
		if err == nil && !met {
			old := p.idx
			old.cleanup()
			p.sketch = hll{}
			sc, err = p.scanWith(refs, nil, old.mem[:0])
		}
	}
	if err != nil {
		if de, ok := err.(*DeepTermError); ok {
			de.Path = p.path
		}
		return err
	}
	p.stats.ObjectsFound = sc.stats.objects
	p.stats.ObjectsDropped = sc.stats.droppedObjects
	p.stats.BucketsPartial = sc.stats.partial
	if !p.trusted && p.stats.ObjectsFound == 0 {
		return fmt.Errorf("%w: %s: damaged header and no objects found", ErrNotDETS, p.path)
	}
	return nil
}

// scanWith runs one scan into a new index (reusing mem's space), with the
// slot table refs for deep keys and, when named is not nil, only the
// buckets named names.
func (p *repairPlan) scanWith(refs, named *slotRefs, mem []repairEntry) (*scanner, error) {
	idx := &entryIndex{fs: p.fs, path: sortPath(p.path), limit: p.tune.repairMemEntries,
		twoLevelMax: p.tune.slotOrderTwoLevelMax, mem: mem}
	if p.hint > 0 && mem == nil {
		// The header's object count (possibly stale) sizes the index.
		idx.mem = make([]repairEntry, 0, min(p.hint+p.hint/8+1024, int64(idx.limit)))
	}
	p.idx = idx
	sketch := &p.sketch
	sc := &scanner{data: p.data, kind: p.kind, keyPos: p.keyPos, maxSz: p.maxBucket, guard: p.guard,
		splitMin: p.tune.parallelScanMin, splitCap: idx.limit / 4, splitHint: int(p.hint/2 + p.hint/16),
		named: named}
	sc.emit = func(e repairEntry) error {
		sketch.add(e.hash)
		return idx.add(e)
	}
	if refs != nil {
		sc.referenced = refs.names
	}
	if p.progress != nil {
		size, progress := p.size, p.progress
		sc.report = func(b, o int64) {
			progress(RepairProgress{Phase: "scan", BytesScanned: b, BytesTotal: size, Objects: o})
		}
	}
	return sc, p.guard.run(sc.run)
}

// sizeSlots sizes the new table from the distinct keys the sketch counted:
// Next is the estimate rounded up to a whole segment, within the slot
// bounds (docs/repair.md §4).
func (p *repairPlan) sizeSlots() {
	next := (p.sketch.estimate() + slotsPerSeg - 1) / slotsPerSeg * slotsPerSeg
	p.next = min(max(next, int64(p.minSlots)), int64(p.maxSlots))
	m, n := hashParamsFor(uint64(p.next))
	p.m, p.n = uint32(m), uint32(n) // next is at most maxSlotsLimit
	p.stats.Slots = p.next
}

// sort orders the index by (new slot, file offset), in memory or through
// PATH.TMP.sort (docs/repair.md §5).
func (p *repairPlan) sort() error {
	m, n := uint64(p.m), uint64(p.n)
	order, err := p.idx.sorted(func(e repairEntry) uint32 { return uint32(slotOf(uint64(e.hash), m, n)) }, uint32(p.next), p.data)
	p.order = order
	p.stats.ExternalSort = p.idx.spilled
	return err
}

// build writes PATH.TMP, complete and fsynced, from the sorted index
// (docs/repair.md §6); on an error it removes it.
func (p *repairPlan) build() error {
	p.tmp = tmpPath(p.path)
	if err := checkWritable(p.fs, p.path); err != nil {
		return err
	}
	out, err := createFresh(p.fs, p.tmp, 0o644)
	if err != nil {
		return err
	}
	if err := keepOwnerAndMode(p.fs, p.path, out); err != nil {
		out.Close()
		p.fs.Remove(p.tmp)
		return err
	}
	w, err := p.buildInto(out)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.fs.Remove(p.tmp)
		return err
	}
	p.stats.Objects, p.stats.Keys = w.objects, w.keys
	if p.progress != nil {
		p.progress(RepairProgress{Phase: "write", BytesScanned: p.size, BytesTotal: p.size, Objects: p.stats.Objects})
	}
	return nil
}

// buildInto runs the slot builders over the sorted index and writes the
// table they build into out; the writer it returns has the totals. A large
// in-memory index is built by two goroutines, each taking a contiguous half
// of the slots.
func (p *repairPlan) buildInto(out File) (*tableWriter, error) {
	its, bounds := []entryIter{p.order}, []uint32{0}
	if oi, ok := p.order.(*orderIter); ok && oi.end-oi.i >= p.tune.parallelBuildMin && runtime.GOMAXPROCS(0) > 1 {
		its, bounds = oi.split()
		if len(its) > 1 && p.tune.buildSplit != nil {
			p.tune.buildSplit()
		}
	}
	w, err := newTableWriter(out, p, bounds)
	if err != nil {
		return nil, err
	}
	var done atomic.Int64
	bs := make([]*slotBuilder, len(its))
	for i := range bs {
		bs[i] = &slotBuilder{data: p.data, kind: p.kind, keyPos: p.keyPos, w: w.placers[i], done: &done}
	}
	if p.progress != nil {
		size, progress := p.size, p.progress
		bs[0].report = func(o int64) {
			progress(RepairProgress{Phase: "write", BytesScanned: size, BytesTotal: size, Objects: o})
		}
	}
	err = p.guard.run(func() error {
		w.planExact(its, bs[0], p.size)
		return nil
	})
	if err == nil {
		errs := make([]error, len(bs))
		var wg sync.WaitGroup
		for i := 1; i < len(bs); i++ {
			wg.Go(func() { errs[i] = p.guard.run(func() error { return bs[i].run(its[i]) }) })
		}
		errs[0] = p.guard.run(func() error { return bs[0].run(its[0]) })
		wg.Wait()
		err = firstError(errs)
	}
	if err != nil {
		w.abort()
		return nil, err
	}
	return w, w.finish()
}

// firstError returns the first non-nil error of errs.
func firstError(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// replace renames PATH.TMP over the old file and makes the rename durable
// (docs/repair.md §7). The map goes first: nothing may read the old bytes
// after the rename. Where a file can be renamed over while open (unix), the
// old descriptor is closed after the directory fsync, on another goroutine:
// the last close of the replaced file frees its pages and blocks, which
// takes a few milliseconds that need not delay the caller, and which the
// directory's journal commit then need not include.
func (p *repairPlan) replace() error {
	if p.unmap != nil {
		p.unmap()
		p.unmap = nil
	}
	p.idx.cleanup()
	_, lateClose := p.src.(osFile)
	lateClose = lateClose && renameOverOpen
	if !lateClose {
		p.srcOpen = false
		p.src.Close()
	}
	if err := p.fs.Rename(p.tmp, p.path); err != nil {
		p.fs.Remove(p.tmp)
		return err
	}
	err := p.fs.SyncDir(filepath.Dir(p.path))
	if lateClose {
		p.srcOpen = false
		go p.src.Close()
	}
	return err
}

// repairFile is the seam Open uses (see table.go): it rebuilds path, a file
// that was not closed properly, has bad free lists, or is being compacted by
// ForceRepair. h is the header as read, or nil.
var repairFile = func(path string, opts Options, h *header) error {
	_, err := repairTable(paramsFor(path, opts, opts.Progress))
	return err
}

func paramsFor(path string, opts Options, progress func(RepairProgress)) repairParams {
	p := repairParams{fs: opts.FS, path: path, wantKind: opts.Kind, wantKeyPos: opts.KeyPos, progress: progress, tune: opts.tuned()}
	if _, isOS := opts.FS.(OSFS); opts.FS == nil || isOS {
		// A repair replaces the file a symbolic link names, not the link:
		// PATH.TMP goes beside the data and the rename lands on it.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			p.path = real
		}
	}
	if lo, hi, err := opts.slotBounds(); err == nil {
		if opts.MinSlots > 0 {
			p.wantMinSlots = lo
		}
		if opts.MaxSlots > 0 {
			p.wantMaxSlots = hi
		}
	}
	if lo, hi, err := opts.nativeSlotBounds(); err == nil {
		if opts.MinSlots > 0 {
			p.natMin = lo
		}
		if opts.MaxSlots > 0 {
			p.natMax = hi
		}
	}
	return p
}
