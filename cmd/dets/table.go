package main

import (
	"os"

	"github.com/godets/godets/dets"
)

// describe collects what `dets info` shows about an open table.
func describe(path string, t *dets.Table) (tableInfo, error) {
	in, err := t.Info()
	if err != nil {
		return tableInfo{}, err
	}
	objects, keys := int64(in.Size), int64(in.NoKeys)
	ti := tableInfo{
		File:           path,
		Format:         in.Format.String(),
		Version:        formatVersion(in.Format),
		Kind:           in.Kind.String(),
		KeyPos:         in.KeyPos,
		Objects:        &objects,
		Keys:           &keys,
		Slots:          &slotsInfo{Min: int64(in.NoSlots.Min), Current: int64(in.NoSlots.Next), Max: int64(in.NoSlots.Max)},
		FileSize:       in.FileSize,
		ClosedProperly: in.Clean,
	}
	// The file size on disk is what an operator compares with ls.
	if sz, err := fileSize(path); err == nil {
		ti.FileSize = sz
	}
	return ti, nil
}

// formatVersion is the on-disk version number of a format: 9, or 1 for
// native, whose version word is "NAT1" (its revision is reported apart).
func formatVersion(f dets.Format) int {
	switch f {
	case dets.OTP9:
		return 9
	case dets.Native:
		return 1
	}
	return 0
}

// objectCount is the table's object count, or 0 if it cannot be read.
func objectCount(t *dets.Table) int64 {
	in, err := t.Info()
	if err != nil {
		return 0
	}
	return int64(in.Size)
}

// tableShape is the table's kind and key position.
func tableShape(t *dets.Table) (dets.Kind, int) {
	in, err := t.Info()
	if err != nil || in.KeyPos < 1 {
		return 0, 1
	}
	return in.Kind, in.KeyPos
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
