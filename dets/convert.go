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

// otp9SizeBound is the size of the otp9 file that the repair writer
// builds, on one placer (as convertToOTP9 has it build), for a table of
// next slots whose buckets have the given sizes in slot order (0: empty),
// from objects objects staged in objBytes bytes, with an index that
// spills at memEntries entries. It is not an estimate: it replays the
// writer's layout on the sizes with the writer's own placement rules
// (layoutSize), so it is the exact size, and the writer never ends past
// it.
//
// Two estimates before it were too low. One counted no alignment gap
// below the largest block: one 100 KiB object made a 230 KB file where it
// said 204 KB. The next counted one: but past 64 MiB the chunked layout
// puts each block of a chunk or more at the end of the file aligned to
// its own size, so blocks of 4 and 8 MiB in turn leave a gap each time
// (20 objects of 3 and 5 MiB: 176.2 MB against 156.6 MB). Near otp9's
// limit a table passed the check, wrote DST.TMP up to 2 GB and failed
// with ErrFileTooLarge.
func otp9SizeBound(next uint64, sizes []uint32, objBytes int64, objects uint64, memEntries int) uint64 {
	nSegs := int64(next / slotsPerSeg)
	nParts := (nSegs + segsPerPart - 1) / segsPerPart
	start := int64(baseAddr) + (nParts+nSegs)*segmentSize
	// planExact's conditions; the index of the staged objects is
	// replayable unless it spilled.
	plan := objects < planMaxEntries && objBytes <= planMaxBytes && objects < uint64(memEntries)
	return uint64(layoutSize(start, sizes, plan, chunkFor(objBytes)))
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
	need := otp9SizeBound(next, sizes, int64(objBytes), objects, t.tune.repairMemEntries)
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
	// One placer: with two, where their blocks land depends on which
	// takes space at the end of the file first, and the size checked
	// above would be a guess.
	p.tune.parallelBuildMin = math.MaxInt
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
