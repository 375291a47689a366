// Package fuzz holds end-to-end fuzz targets over the public dets API
// (docs/reliability.md §5):
//
//   - FuzzOpen: arbitrary file bytes opened with NoRepair and AutoRepair.
//     Never a panic; only typed errors; a refused file stays byte-identical;
//     a repaired file passes Check and reopens with NoRepair.
//   - FuzzRepair: a valid fixture file of each kind damaged by bit flips,
//     truncations, zeroed and copied ranges chosen by the fuzz input, then
//     dets.Repair. Never a panic; only typed errors; a refused file stays
//     byte-identical; the result passes Check, reopens with NoRepair, and
//     holds only objects once inserted into the fixture (damage can revive a
//     freed bucket, so deleted or overwritten objects may return: otp9 has no
//     sequence numbers) or objects that visibly fail their own CRC (otp9
//     objects carry no checksum).
//
// Files live in an in-memory internal/crashfs file system. Seeds are in
// testdata/fuzz/<Target>/ and run with plain go test; regenerate them with
// GODETS_GEN_CORPUS=1 go test -run TestGenCorpus ./fuzz. Fuzz with, e.g.,
// go test -run '^$' -fuzz '^FuzzOpen$' -fuzztime 60s ./fuzz.
//
// go generate ./fuzz does the same.
//
//go:generate env GODETS_GEN_CORPUS=1 go test -count=1 -run ^TestGenCorpus$ .
package fuzz
