package dets

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// Conversion between otp9 and native (docs/format-native.md §13.1).

// ConvertOptions says how Convert treats its files.
type ConvertOptions struct {
	// Repair is how the source opens: NoRepair (the zero value) refuses
	// a source not closed properly with ErrNeedsRepair and opens it
	// read-only; AutoRepair and ForceRepair open it read-write, as Open
	// would, which may rewrite the source first.
	Repair RepairMode
	// Force replaces an existing destination; without it an existing
	// destination gives an error matching fs.ErrExist.
	Force bool

	// tune is the source table's tuning (nil: defaultTuning); tests lower
	// its otp9SizeLimit.
	tune *tuning
}

// ConvertStats describes a finished conversion.
type ConvertStats struct {
	From, To      Format
	Objects, Keys int64  // in the destination
	MinSlots      uint64 // the destination's slot bounds
	MaxSlots      uint64
	// MaxSlotsClamped: the source's slot ceiling was above otp9's 2^25
	// and the destination has 2^25. A ceiling is not content: no object
	// is affected.
	MaxSlotsClamped bool
	// MinSlotsRaised: an otp9 minimum below native's 512 slots became 512.
	MinSlotsRaised bool
	// ExternalSort: to otp9, the index spilled to DST.TMP.sort (removed
	// since), as a repair's does past 2Mi objects.
	ExternalSort bool
}

// ErrFormatLimit: a conversion to otp9 of a table that otp9 cannot hold
// (its file size, object or key count, or minimum slot count). Details
// are in *FormatLimitError.
var ErrFormatLimit = errors.New("dets: table exceeds a limit of the otp9 format")

// FormatLimitError says which otp9 limit a conversion would exceed. It
// matches ErrFormatLimit.
type FormatLimitError struct {
	Path  string // the source
	What  string // "file size", "object count", "key count" or "minimum slot count"
	Need  uint64
	Limit uint64
	Unit  string // "bytes", "objects", "keys" or "slots"
}

func (e *FormatLimitError) Error() string {
	return fmt.Sprintf("dets: table exceeds otp9's %s: needs %s %s, limit %s", e.What, groupDigits(e.Need), e.Unit, groupDigits(e.Limit))
}

// Is reports that a FormatLimitError is an ErrFormatLimit.
func (e *FormatLimitError) Is(target error) bool { return target == ErrFormatLimit }

// groupDigits writes n with a comma every three digits.
func groupDigits(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Convert writes the table at src into a new file dst in format to,
// losslessly: every object, each key's objects in their order, the kind,
// key position and slot bounds. The result is built in dst+".TMP",
// fsynced and renamed over dst, and the directory fsynced; src is never
// written (unless opts.Repair repairs it at open). The caller must own
// both files (package exclusive: `dets convert` takes both locks, in the
// order of their resolved paths); a file open in this process gives
// ErrAlreadyOpen.
//
// Conversion to otp9 checks otp9's limits before it writes any byte of
// dst or dst+".TMP": a file that would end past otp9's size limit, more
// than 2^32-1 objects or keys, or a minimum slot count above 2^25 give a
// *FormatLimitError (ErrFormatLimit). A slot ceiling above 2^25 becomes
// 2^25 (ConvertStats.MaxSlotsClamped). Both ways the objects go through
// the repair pipeline's sort and the target's writer: to otp9 copied byte
// for byte; to native copied where they are in etf.Encode's form, else
// encoded anew (the terms are equal), each key's objects in their order.
func Convert(src, dst string, to Format, opts ConvertOptions) (ConvertStats, error) {
	st := ConvertStats{To: to}
	if to != OTP9 && to != Native {
		return st, fmt.Errorf("%w: unknown format %d", ErrInvalidOptions, to)
	}
	if _, err := os.Lstat(dst); err == nil && !opts.Force {
		return st, fmt.Errorf("dets: convert: %s: %w", dst, fs.ErrExist)
	}
	// The names Convert replaces or removes must not reach src, by any
	// link: dst itself, and its temporary and spill files (removed before
	// the write starts).
	if si, err := os.Stat(src); err == nil {
		for _, name := range []string{dst, tmpPath(dst), sortPath(dst)} {
			if fi, err := os.Stat(name); err == nil && os.SameFile(si, fi) {
				return st, fmt.Errorf("%w: convert: %s and %s are the same file", ErrInvalidOptions, src, name)
			}
		}
	}
	claim, err := claimPath(nil, dst)
	if err != nil {
		return st, err
	}
	defer claim.release()
	t, err := Open(src, Options{ReadOnly: opts.Repair == NoRepair, Repair: opts.Repair, tune: opts.tune})
	if err != nil {
		return st, err
	}
	defer t.Close()
	st.From = t.lay.format()
	if st.From == to {
		return st, fmt.Errorf("%w: convert: %s is already %s", ErrInvalidOptions, src, to)
	}
	tmp := tmpPath(dst)
	if to == Native {
		err = convertToNative(t, src, tmp, &st)
	} else {
		err = convertToOTP9(t, src, dst, &st)
	}
	if err != nil {
		return st, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return st, err
	}
	return st, OSFS{}.SyncDir(filepath.Dir(dst))
}

// otp9SizeBound bounds the size of the otp9 file that the repair writer
// builds for a table of next slots whose buckets have the given sizes
// (0: empty): the header and part area, the segments, each bucket's
// power-of-two block, and room for what the writer's layout adds: the
// gap below its first block, the unused tails of its class chunks on a
// large table (repairPlan's chunked layout) and the free lists and
// trailer. The writer's real file never ends past it; it is above the
// exact size by at most those allowances (under 10 MiB at otp9's 2 GB,
// plus the largest block's alignment).
//
// The writer places the largest blocks first, each aligned to its size
// from the base, so the first one starts at the segments' end rounded up
// to its size; the blocks of the smaller classes fill what lies below it
// or follow. The gap was not counted once: one 100 KiB object made a
// 230 KB file where the bound said 204 KB, and at otp9's limit a table
// passed the check and failed while writing.
func otp9SizeBound(next uint64, sizes []uint32, objBytes int64, objects uint64) uint64 {
	nSegs := next / slotsPerSeg
	area := (nSegs + (nSegs+segsPerPart-1)/segsPerPart) * segmentSize
	var blocks, largest uint64
	for _, s := range sizes {
		if s != 0 {
			b := uint64(pow2ceil(int64(s)))
			blocks += b
			largest = max(largest, b)
		}
	}
	if largest > 0 {
		area = (area + largest - 1) / largest * largest
	}
	need := uint64(baseAddr) + area + blocks
	const freeListRoom = 64 << 10 // 16k free blocks, far more than a packed layout leaves
	need += freeListRoom
	if objects >= planMaxEntries || objBytes > planMaxBytes {
		chunk := chunkFor(objBytes)
		need += uint64(1+2*log2ceil(chunk)) * uint64(chunk) // the chunk tails of two placers
	}
	return need
}

// convertToOTP9 writes dst+".TMP" as the otp9 file of the native table t:
// every object's bytes, verified by their checksums, are indexed by their
// offset in the mapped source and their key's phash2, then the repair
// pipeline sorts the index and its writer builds the file
// (docs/format-native.md §13.1). otp9's limits are checked in between,
// before anything is written.
func convertToOTP9(t *Table, srcPath, dst string, st *ConvertStats) error {
	if err := t.begin(false); err != nil {
		return err
	}
	defer t.mu.Unlock()
	h := t.h
	switch {
	case h.noObjects > math.MaxUint32:
		return &FormatLimitError{Path: srcPath, What: "object count", Need: h.noObjects, Limit: math.MaxUint32, Unit: "objects"}
	case h.noKeys > math.MaxUint32:
		return &FormatLimitError{Path: srcPath, What: "key count", Need: h.noKeys, Limit: math.MaxUint32, Unit: "keys"}
	case h.minSlots > maxSlotsLimit:
		return &FormatLimitError{Path: srcPath, What: "minimum slot count", Need: h.minSlots, Limit: maxSlotsLimit, Unit: "slots"}
	}
	minS, maxS := h.minSlots, h.maxSlots
	if maxS > maxSlotsLimit {
		maxS, st.MaxSlotsClamped = maxSlotsLimit, true
	}
	next := (h.noKeys + slotsPerSeg - 1) / slotsPerSeg * slotsPerSeg
	next = min(max(next, minS), maxS)
	m, n := hashParamsFor(next)

	data, guard, release, err := mapSource(srcPath)
	if err != nil {
		return err
	}
	defer release()
	// walk visits every object of the source in order: its slot in the
	// otp9 table, its ETF bytes, and whether it starts a new key.
	walk := func(visit func(slot uint64, hash uint32, enc []byte, newKey bool) error) error {
		return guard.run(func() error {
			for slot := uint64(0); slot < h.next; slot++ {
				w, err := t.entry(slot)
				if err != nil {
					return err
				}
				if w.size == 0 {
					continue
				}
				if w.ptr+w.size > int64(len(data)) {
					return corrupt(srcPath, "bucket", w.ptr, "slot %d: bucket past the end of the file", slot)
				}
				var last []byte
				_, err = walkNativeBucket(srcPath, data[w.ptr:w.ptr+w.size], w.ptr, uint64(w.size), t.keyPos, func(recOff int64, enc, kenc []byte) error {
					hash, ok := encodings.Phash2Body(kenc)
					if !ok {
						k, err := encodings.DecodeBody(kenc)
						if err != nil {
							return corrupt(srcPath, "object", recOff, "key: %v", err)
						}
						hash = hashTerm(k)
					}
					newKey := last == nil || !sameStoredKey(last, kenc)
					last = kenc
					return visit(slotOf(uint64(hash), m, n), hash, enc, newKey)
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	// The sizing pass: each otp9 bucket's size, hence the file's.
	sizes := make([]uint32, next) // saturating: a bucket of 2^32 bytes is past the limit anyway
	var objects, keys, objBytes uint64
	err = walk(func(s uint64, _ uint32, enc []byte, newKey bool) error {
		add := uint64(4 + len(enc))
		if sizes[s] == 0 {
			add += bucketHeaderSize
		}
		if newKey {
			keys++
			if t.kind != Set {
				add += 4
			}
		}
		sizes[s] = uint32(min(uint64(sizes[s])+add, math.MaxUint32))
		objects++
		objBytes += 4 + uint64(len(enc))
		return nil
	})
	if err != nil {
		return err
	}
	if objects != h.noObjects || keys != h.noKeys {
		return corrupt(srcPath, "meta", t.nat.metaOff, "counts %d objects and %d keys, the buckets hold %d and %d", h.noObjects, h.noKeys, objects, keys)
	}
	need := otp9SizeBound(next, sizes, int64(objBytes), objects)
	if limit := uint64(t.tune.otp9SizeLimit); need > limit {
		return &FormatLimitError{Path: srcPath, What: "file size", Need: need, Limit: limit, Unit: "bytes"}
	}
	sizes = nil
	// The repair pipeline's sort reads each object's length from the
	// otp9 size word before its bytes, so the objects are staged in otp9
	// framing, <<Size:32, ETF>>; the limit check above bounds this
	// buffer by otp9's file size.
	staged := make([]byte, 0, objBytes)
	p := &repairPlan{repairParams: repairParams{fs: OSFS{}, path: dst, tune: t.tune},
		kind: t.kind, keyPos: t.keyPos, minSlots: uint32(minS), maxSlots: uint32(maxS), trusted: true,
		next: int64(next), m: uint32(m), n: uint32(n)}
	p.idx = &entryIndex{fs: p.fs, path: sortPath(dst), limit: p.tune.repairMemEntries,
		twoLevelMax: p.tune.slotOrderTwoLevelMax}
	defer p.idx.cleanup()
	err = walk(func(_ uint64, hash uint32, enc []byte, _ bool) error {
		staged = be.AppendUint32(staged, uint32(4+len(enc)))
		at := uint64(len(staged))
		staged = append(staged, enc...)
		return p.idx.add(repairEntry{off: at, n: uint32(len(enc)), hash: hash})
	})
	if err != nil {
		return err
	}
	p.data, p.size = staged, int64(len(staged))
	if err := p.sort(); err != nil {
		return err
	}
	if err := p.build(); err != nil {
		return err
	}
	st.Objects, st.Keys, st.ExternalSort = p.stats.Objects, p.stats.Keys, p.stats.ExternalSort
	st.MinSlots, st.MaxSlots = minS, maxS
	if st.Objects != int64(objects) || st.Keys != int64(keys) {
		os.Remove(p.tmp)
		return fmt.Errorf("dets: convert: the otp9 writer wrote %d objects and %d keys of %d and %d", st.Objects, st.Keys, objects, keys)
	}
	return nil
}
