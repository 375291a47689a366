// Package fuzz holds end-to-end fuzz targets over the public dets API
// (docs/reliability.md §5):
//
//   - FuzzOpen: arbitrary file bytes opened with NoRepair and AutoRepair.
//     Never a panic; only typed errors; a refused file stays byte-identical;
//     a repaired file passes Check and reopens with NoRepair. A native
//     recovery reads only what its log names, so damage elsewhere may
//     remain: it must be a *CorruptionError in the input, outside every
//     byte the open wrote, and ForceRepair must then give a clean table.
//   - FuzzRepair: a valid fixture file of each kind damaged by bit flips,
//     truncations, zeroed and copied ranges chosen by the fuzz input, then
//     dets.Repair. Never a panic; only typed errors; a refused file stays
//     byte-identical; the result passes Check, reopens with NoRepair, and
//     holds only objects once inserted into the fixture (damage can revive a
//     freed bucket, so deleted or overwritten objects may return: otp9 has no
//     sequence numbers) or objects that visibly fail their own CRC (otp9
//     objects carry no checksum).
//   - FuzzInspect: the same damaged fixtures, then every view of dets
//     inspect (Image, NativeImage: fields, tree, slots, regions, rows,
//     bucket annotations, Redact) with slots and offsets inside, at the
//     edges of and far outside the file. Never a panic; the image is not
//     changed; a redaction keeps its length; allocation stays within a
//     budget that follows the file's size, never a size the file claims.
//
// TestOpenDamagedNative runs FuzzOpen's property on seeded random damage of
// the native files, so that plain go test reaches what fuzzing a large
// input finds only by chance.
//
// FuzzRepair damages, besides the closed fixtures, the native fixtures as
// their killed writers left them (repairSources).
//
// Files live in an in-memory internal/crashfs file system. Seeds are in
// testdata/fuzz/<Target>/ and run with plain go test; regenerate them with
// GODETS_GEN_CORPUS=1 go test -run TestGenCorpus ./fuzz. FuzzOpen's native
// seeds (smallNativeSeeds: a few objects of each kind, a file not closed,
// one with a log block, one of two segments) are kept in a sparse form
// (sparse_test.go) that the target expands: a native file is 36 KiB or
// more of mostly zero pages, four bytes a zero in Go's corpus format. The
// native fixtures and a table grown past its 512 slots are added by the
// targets themselves; TestNativeSeedsCommitted checks that the committed
// native seeds still open to their objects. Fuzz with, e.g.,
// go test -run '^$' -fuzz '^FuzzOpen$' -fuzztime 60s ./fuzz.
//
// go generate ./fuzz does the same.
//
//go:generate env GODETS_GEN_CORPUS=1 go test -count=1 -run ^TestGenCorpus$ .
package fuzz
