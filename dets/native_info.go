package dets

import (
	"fmt"
	"os"
)

// NativeInfo is the state of a native file's format (dets info,
// docs/format-native.md §13.3).
type NativeInfo struct {
	Revision uint32
	Checksum string // "xxhash64"
	KeyHash  string // "farm64"
	// The current meta: its generation and page ("A" or "B"), and the
	// other page's meta, which a torn write of the next falls back to.
	MetaGen       uint64
	MetaPage      string
	FallbackGen   uint64 // 0 when FallbackValid is false
	FallbackValid bool
	// LogRecords counts the records of the current epoch's log (LINKs
	// left out). A file with any was not closed properly; an open table
	// counts the records its writes have added.
	LogRecords int
	// VerifiedGen is the last generation at which a repair read every
	// object and found all sound; 0 means never.
	VerifiedGen uint64
}

// nativeInfo is the NativeInfo of an open native table, from memory.
func (t *Table) nativeInfo() *NativeInfo {
	nat := t.nat
	ni := nativeInfoOf(&nat.super, &nat.meta, nat.metaOff)
	ni.LogRecords = nat.records
	return ni
}

func nativeInfoOf(s *nativeSuper, m *nativeMeta, page int64) *NativeInfo {
	ni := &NativeInfo{Revision: s.revision, Checksum: "xxhash64", KeyHash: "farm64",
		MetaGen: m.gen, MetaPage: "A", VerifiedGen: m.verifiedGen}
	if page == nativeMetaBOff {
		ni.MetaPage = "B"
	}
	return ni
}

// ReadNativeInfo reads the format state of the native file at path without
// opening it as a table, so that it also describes a file that was not
// closed properly. It only reads: the superblock, both metas and the
// current epoch's log. A file that is not native gives ErrFormatMismatch;
// one whose superblock or both metas fail, their error.
func ReadNativeInfo(path string) (NativeInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return NativeInfo{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return NativeInfo{}, err
	}
	size := st.Size()
	hb := make([]byte, nativeBase)
	if size < nativeBase {
		return NativeInfo{}, fmt.Errorf("%w: %s is not a native file", ErrFormatMismatch, path)
	}
	if _, err := f.ReadAt(hb, 0); err != nil {
		return NativeInfo{}, err
	}
	if be.Uint32(hb[nsOffVersion:]) != nativeVersionBE {
		return NativeInfo{}, fmt.Errorf("%w: %s is not a native file", ErrFormatMismatch, path)
	}
	s, err := decodeNativeSuper(path, hb, size)
	if err != nil {
		return NativeInfo{}, err
	}
	ma, errA := decodeNativeMeta(path, hb[nativeMetaAOff:], nativeMetaAOff, &s, size)
	mb, errB := decodeNativeMeta(path, hb[nativeMetaBOff:], nativeMetaBOff, &s, size)
	m, page, fallbackOK, ok := chooseNativeMeta(ma, errA, mb, errB)
	if !ok {
		return NativeInfo{}, nativeMetaErr(errA, errB)
	}
	ni := nativeInfoOf(&s, &m, page)
	if fallbackOK {
		ni.FallbackValid, ni.FallbackGen = true, ma.gen
		if page == nativeMetaAOff {
			ni.FallbackGen = mb.gen
		}
	}
	read := func(off uint64, n int) ([]byte, error) {
		b := make([]byte, n)
		if _, err := f.ReadAt(b, int64(off)); err != nil {
			return nil, err
		}
		return b, nil
	}
	lg, err := readNativeLog(path, read, s.revision, s.fileID, m.gen, m.seq, s.base, uint64(size))
	if err != nil {
		return NativeInfo{}, err
	}
	ni.LogRecords = len(lg.recs)
	return *ni, nil
}
