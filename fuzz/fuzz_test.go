package fuzz

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
	"github.com/godets/godets/internal/testutil/tabletest"
)

const path = "f.dets"

var typedErrors = []error{dets.ErrNeedsRepair, dets.ErrNotDETS, dets.ErrCorrupt, dets.ErrUnsupportedVersion,
	dets.ErrBadTypeCode, dets.ErrBadHashMethod, dets.ErrUnsupportedHash, dets.ErrKindMismatch,
	dets.ErrKeyPosMismatch, dets.ErrFileTooLarge, dets.ErrNotClosed, dets.ErrInvalidOptions, dets.ErrNotSupported}

func typed(err error) bool {
	for _, s := range typedErrors {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func enc(t testing.TB, x etf.Term) string {
	b, err := etf.Encode(x)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// obj is {K, V, Pad, CRC}, CRC over the encoding of {K, V, Pad}.
func obj(k, v, pad int) etf.Term {
	base := etf.Tuple{etf.Int(k), etf.Int(v), etf.Binary(bytes.Repeat([]byte{byte(k*5 + v)}, pad))}
	b, _ := etf.Encode(base)
	return append(base, etf.Int(int64(crc32.ChecksumIEEE(b))))
}

func selfCheck(o etf.Term) bool {
	tu, ok := o.(etf.Tuple)
	if !ok || len(tu) != 4 {
		return false
	}
	c, ok := tu[3].(etf.Int)
	b, err := etf.Encode(tu[:3])
	return ok && err == nil && uint32(c) == crc32.ChecksumIEEE(b)
}

type fixture struct {
	kind   dets.Kind
	format dets.Format
	img    []byte
	dirty  []byte // native: the file as a killed writer leaves it (a log after the last checkpoint)
	objs   map[string]bool
}

var (
	fixOnce  sync.Once
	fixtures []fixture
	fixErr   error
)

// makeFixtures builds one small closed file per kind and format: 120
// inserts on 50 keys (one large object), some deletes; otp9's are 2-9 KiB,
// native's about 100 KiB. The otp9 fixtures come first, so that a seed's
// fixture index keeps naming the fixture it named before native ones.
func makeFixtures() ([]fixture, error) {
	fixOnce.Do(func() {
		for _, c := range []struct {
			kind   dets.Kind
			format dets.Format
		}{{dets.Set, dets.OTP9}, {dets.Bag, dets.OTP9}, {dets.DuplicateBag, dets.OTP9},
			{dets.Set, dets.Native}, {dets.Bag, dets.Native}, {dets.DuplicateBag, dets.Native}} {
			kind := c.kind
			cfs := tabletest.NewMemFS()
			tab, err := dets.Open(path, dets.Options{Kind: kind, Format: c.format, FS: cfs})
			if err != nil {
				fixErr = err
				return
			}
			// objs holds every object ever inserted: damage can turn a
			// freed or stale bucket ACTIVE again, and otp9 has nothing to
			// tell an old version from the current one, so repair may
			// resurrect overwritten or deleted objects, but never invent.
			fx := fixture{kind: kind, format: c.format, objs: map[string]bool{}}
			for i := range 120 {
				pad := (i % 4) * 9
				if i == 11 {
					pad = 1400
				}
				o := obj(i%50, i%3, pad)
				b, _ := etf.Encode(o)
				fx.objs[string(b)] = true
				if err := tab.Insert(o); err != nil {
					fixErr = err
					return
				}
			}
			if c.format == dets.Native {
				if err := tab.Sync(); err != nil {
					fixErr = err
					return
				}
			}
			for k := 0; k < 50; k += 7 {
				tab.Delete(etf.Int(k))
			}
			if c.format == dets.Native {
				fx.dirty = cfs.Get(path)
			}
			if err := tab.Close(); err != nil {
				fixErr = err
				return
			}
			fx.img = cfs.Get(path)
			fixtures = append(fixtures, fx)
		}
	})
	return fixtures, fixErr
}

// contents reads every object; a read error is returned.
func contents(tab *dets.Table) ([]etf.Term, error) {
	var out []etf.Term
	for o, err := range tab.All() {
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// reopenClean opens path with NoRepair, checks it and returns its objects.
func reopenClean(t *testing.T, cfs tabletest.MemFS, what string) []etf.Term {
	t.Helper()
	tab, err := dets.Open(path, dets.Options{FS: cfs})
	if err != nil {
		t.Fatalf("%s: NoRepair reopen after repair: %v", what, err)
	}
	defer tab.Close()
	if err := tab.Check(); err != nil {
		t.Fatalf("%s: Check after repair: %v", what, err)
	}
	objs, err := contents(tab)
	if err != nil {
		t.Fatalf("%s: All after repair: %v", what, err)
	}
	return objs
}

// latentDamage accepts a read error after a native recovery only as
// damage the recovery did not write: a recovery replays the log after the
// last checkpoint and reads what the log names, not the whole file (that
// is the full repair's job), so damage elsewhere in a file that was not
// closed properly is found at its first read, as on a file that was. The
// first *CorruptionError of each error must lie in the input and outside
// every range the open wrote; an error anywhere the recovery wrote, an
// untyped one, or a Check that fails with no damage to name is the
// recovery's own fault.
func latentDamage(t *testing.T, what string, data []byte, writes []crashfs.Record, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err == nil {
			continue
		}
		var ce *dets.CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("%s: after a recovery: %v, not a *CorruptionError", what, err)
		}
		if ce.Offset < 0 || ce.Offset >= int64(len(data)) {
			t.Fatalf("%s: after a recovery: %v, outside the input's %d bytes", what, err, len(data))
		}
		for _, w := range writes {
			if ce.Offset >= w.Off && ce.Offset < w.Off+int64(len(w.Data)) {
				t.Fatalf("%s: after a recovery: %v, in %v, which the recovery wrote", what, err, w)
			}
		}
	}
}

// forceRepairClean runs the full repair on a closed table with damage a
// recovery left (latentDamage) and checks the result.
func forceRepairClean(t *testing.T, cfs tabletest.MemFS, what string) {
	t.Helper()
	tab, err := dets.Open(path, dets.Options{FS: cfs, Repair: dets.ForceRepair})
	if err != nil {
		t.Fatalf("%s: ForceRepair after a recovery that left damage: %v", what, err)
	}
	if err := tab.Close(); err != nil {
		t.Fatalf("%s: Close after ForceRepair: %v", what, err)
	}
	reopenClean(t, cfs, what+", then forced")
}

// writeBudget bounds the bytes one FuzzOpen case may write. The writes of
// writeCase are sized by the table's key position, which the file sets (up
// to 2^32-1, and OTP opens such a table); an input that makes one case
// write more than this means either the harness or the engine does work
// the input size does not justify.
const writeBudget = 64 << 20

// maxWriteArity is the largest key position writeCase builds objects for.
const maxWriteArity = 1 << 16

// errWriteBudget is what the file system returns once a case exceeds
// writeBudget; openCase reports it as an untyped error, which fails.
var errWriteBudget = errors.New("fuzz harness: write budget exceeded")

// openCase is the FuzzOpen property for one repair mode.
func openCase(t *testing.T, data []byte, mode dets.RepairMode) {
	cfs := tabletest.NewMemFS()
	cfs.Put(path, data)
	written := 0
	var openWrites []crashfs.Record // the writes of the Open
	opening := true
	cfs.SetHook(func(r crashfs.Record) error {
		if r.Kind == crashfs.OpWrite {
			if written += len(r.Data); written > writeBudget {
				return fmt.Errorf("%w: %d bytes written for a %d-byte input (budget %d)", errWriteBudget, written, len(data), writeBudget)
			}
			if opening {
				openWrites = append(openWrites, r)
			}
		}
		return nil
	})
	what := fmt.Sprintf("repair %s", mode)
	tab, err := dets.Open(path, dets.Options{FS: cfs, Repair: mode})
	opening = false
	if err != nil {
		if !typed(err) {
			t.Fatalf("%s: untyped error %v", what, err)
		}
		if !bytes.Equal(cfs.Get(path), data) {
			t.Fatalf("%s: refused open changed the file", what)
		}
		return
	}
	repaired := !bytes.Equal(cfs.Get(path), data)
	_, recovered, err := tab.Recovery()
	if err != nil {
		t.Fatalf("%s: Recovery: %v", what, err)
	}
	_, rerr := contents(tab)
	cerr := tab.Check()
	if rerr != nil && !typed(rerr) {
		t.Fatalf("%s: All: untyped error %v", what, rerr)
	}
	if cerr != nil && !typed(cerr) {
		t.Fatalf("%s: Check: untyped error %v", what, cerr)
	}
	if rerr == nil && cerr == nil {
		writeCase(t, tab, what)
	}
	if err := tab.Close(); err != nil && !typed(err) {
		t.Fatalf("%s: Close: untyped error %v", what, err)
	}
	switch {
	case repaired && recovered && (rerr != nil || cerr != nil):
		latentDamage(t, what, data, openWrites, rerr, cerr)
		forceRepairClean(t, cfs, what)
	case repaired && (rerr != nil || cerr != nil):
		t.Fatalf("%s: a repaired table is bad: All %v, Check %v", what, rerr, cerr)
	case repaired:
		reopenClean(t, cfs, what)
	}
	if n := cfs.Names(); len(n) != 1 {
		t.Fatalf("%s: files left: %v", what, n)
	}
}

// writeCase changes a table that read and checked clean: inserts that grow
// and shrink buckets, deletes, and a Sync (whose save moves blocks into
// holes). Every step gives nil or a typed error; when all succeed, the
// table must still check clean.
//
// Objects have the table's key position as arity, which a valid file can
// set to millions (OTP opens a table with any 32-bit key position): the
// fields other than the key and one payload binary are a small integer, and
// a large arity gets fewer writes, so that a case's work follows from the
// input's size and not from one header field. Beyond maxWriteArity only a
// short tuple is tried, and must be refused as a bad object.
func writeCase(t *testing.T, tab *dets.Table, what string) {
	t.Helper()
	info, err := tab.Info()
	if err != nil {
		return
	}
	kp := max(info.KeyPos, 1)
	if kp > maxWriteArity {
		if err := tab.Insert(etf.Tuple{etf.Int(1), etf.Int(2)}); !errors.Is(err, dets.ErrBadObject) {
			t.Fatalf("%s: a 2-tuple in a table with key position %d: %v, want ErrBadObject", what, kp, err)
		}
		return
	}
	arity := max(kp, 2)
	writes := min(30, max(2, (1<<20)/arity))
	for i := range writes {
		obj := make(etf.Tuple, arity)
		for j := range obj {
			obj[j] = etf.Int(0)
		}
		obj[kp%arity] = etf.Binary(bytes.Repeat([]byte{byte(i)}, i*13%300))
		obj[kp-1] = etf.Int(i % 10)
		err := tab.Insert(obj)
		if err == nil && i%3 == 0 {
			err = tab.Delete(etf.Int(i % 7))
		}
		if err != nil {
			if !typed(err) {
				t.Fatalf("%s: write %d: untyped error %v", what, i, err)
			}
			return
		}
	}
	if err := tab.Sync(); err != nil {
		if !typed(err) {
			t.Fatalf("%s: Sync: untyped error %v", what, err)
		}
		return
	}
	if err := tab.Check(); err != nil {
		t.Fatalf("%s: Check after writes to a clean table: %v", what, err)
	}
}

// maxRepairSlots bounds the min_no_slots of the inputs FuzzOpen repairs.
// A repair creates its table with at least the header's min_no_slots, as
// OTP does (docs/repair.md §4), and a table is created with all
// its segments: 8 bytes a slot, 256 MiB for the 2^25 a valid header may
// ask for (OTP 25 writes a 269 MB file for it). Such inputs are valid and
// only slow; they are opened with NoRepair alone.
const maxRepairSlots = 1 << 18

// repairSlots is the min_no_slots field of an otp9 header (bytes 40-43),
// or 0 when data is too short to hold it.
func repairSlots(data []byte) uint32 {
	if len(data) >= 64 && string(data[16:20]) == "NAT1" {
		// native: minSlots, a u64 at 56 (docs/format-native.md §4.1)
		return uint32(min(binary.LittleEndian.Uint64(data[56:]), 1<<32-1))
	}
	if len(data) < 44 {
		return 0
	}
	return binary.BigEndian.Uint32(data[40:])
}

// FuzzOpen: arbitrary bytes as a table file.
func FuzzOpen(f *testing.F) {
	fxs, err := makeFixtures()
	if err != nil {
		f.Fatal(err)
	}
	for _, fx := range fxs {
		f.Add(fx.img)
		if fx.format == dets.Native {
			f.Add(fx.dirty)
			continue
		}
		dirty := slices.Clone(fx.img[:binary.BigEndian.Uint32(fx.img)])
		binary.BigEndian.PutUint32(dirty[8:], 0)
		f.Add(dirty)
	}
	grown, err := grownNative()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(grown)
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte("A"), 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		data, ok := expandInput(data) // the sparse form (sparse_test.go)
		if !ok {
			return
		}
		openCase(t, data, dets.NoRepair)
		if repairSlots(data) <= maxRepairSlots {
			openCase(t, data, dets.AutoRepair)
		}
	})
}

// damage applies the fuzz program prog to img: 4-byte commands
// <op, a, b, c>; offsets are scaled to the image.
func damage(img, prog []byte) []byte {
	img = slices.Clone(img)
	for len(prog) >= 4 && len(img) > 0 {
		op, a, b, c := prog[0], int(prog[1]), int(prog[2]), int(prog[3])
		prog = prog[4:]
		off := (a<<8 | b) * len(img) / 65536
		switch op % 5 {
		case 0: // flip one bit
			img[off] ^= 1 << (c % 8)
		case 1: // truncate
			img = img[:off]
		case 2: // zero a range
			clear(img[off:min(len(img), off+c*8+1)])
		case 3: // set a byte
			img[off] = byte(c)
		case 4: // copy a range from elsewhere (a stale sector)
			src := c * len(img) / 256
			n := min(len(img)-off, len(img)-src, 512)
			copy(img[off:off+n], slices.Clone(img[src:src+n]))
		}
	}
	return img
}

// repairSource is an image FuzzRepair damages: a fixture's closed file,
// or (after all of those) a native fixture's file as its killed writer
// left it, so that the repair's replay of the log meets damage too.
type repairSource struct {
	fx  fixture
	img []byte
}

func repairSources(fxs []fixture) []repairSource {
	srcs := make([]repairSource, 0, len(fxs)+3)
	for _, fx := range fxs {
		srcs = append(srcs, repairSource{fx, fx.img})
	}
	for _, fx := range fxs {
		if fx.format == dets.Native {
			srcs = append(srcs, repairSource{fx, fx.dirty})
		}
	}
	return srcs
}

// FuzzRepair: structured damage of a valid fixture, then dets.Repair.
func FuzzRepair(f *testing.F) {
	fxs, err := makeFixtures()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), []byte{})
	f.Add(uint8(1), []byte{0, 40, 0, 3})
	f.Add(uint8(2), []byte{1, 200, 0, 0})
	f.Add(uint8(0), []byte{2, 100, 0, 64, 0, 2, 0, 7})
	f.Add(uint8(1), []byte{4, 128, 0, 20, 3, 0, 8, 0})
	f.Add(uint8(3), []byte{})                            // native: a full repair of a clean file
	f.Add(uint8(4), []byte{0, 1, 0, 3, 0, 90, 0, 5})     // native: a superblock bit, an object bit
	f.Add(uint8(5), []byte{2, 0, 32, 255, 3, 160, 0, 7}) // native: metas zeroed, a byte set
	f.Add(uint8(6), []byte{0, 60, 0, 2})                 // native: a killed writer's image, a bit flipped
	f.Fuzz(func(t *testing.T, which uint8, prog []byte) {
		if len(prog) > 4*64 {
			return
		}
		src := repairSources(fxs)[int(which)%(len(fxs)+3)]
		fx := src.fx
		img := damage(src.img, prog)
		if repairSlots(img) > maxRepairSlots {
			return // valid but slow (see maxRepairSlots)
		}
		cfs := tabletest.NewMemFS()
		cfs.Put(path, img)
		_, err := dets.Repair(path, dets.Options{Kind: fx.kind, KeyPos: 1, FS: cfs}, nil)
		if err != nil {
			if !typed(err) {
				t.Fatalf("Repair: untyped error %v", err)
			}
			if !bytes.Equal(cfs.Get(path), img) {
				t.Fatal("a failed repair changed the file")
			}
			return
		}
		for _, o := range reopenClean(t, cfs, "repair") {
			if !fx.objs[enc(t, o)] && selfCheck(o) {
				t.Fatalf("the repaired table holds %v, neither a fixture object nor visibly damaged", o)
			}
		}
		if n := cfs.Names(); len(n) != 1 {
			t.Fatalf("files left: %v", n)
		}
	})
}

// TestGenCorpus writes the seed corpora (valid and damaged fixture files)
// under testdata/fuzz when GODETS_GEN_CORPUS=1.
func TestGenCorpus(t *testing.T) {
	if os.Getenv("GODETS_GEN_CORPUS") != "1" {
		t.Skip("set GODETS_GEN_CORPUS=1 to regenerate the seed corpora")
	}
	files, err := corpusFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		dir := filepath.Join("testdata", "fuzz", f.target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), f.content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// corpusFile is one seed file of a fuzz target's corpus, as written.
type corpusFile struct {
	target, name string
	content      []byte
	source       string // the valid seed a damaged FuzzOpen seed was made from
}

// corpusFiles builds the seed corpora: the fixtures, valid and damaged
// (FuzzOpen), and damage programs over them (FuzzRepair). The otp9 seeds
// come out the same each time; the native ones hold random file IDs.
func corpusFiles() ([]corpusFile, error) {
	fxs, err := makeFixtures()
	if err != nil {
		return nil, err
	}
	var files []corpusFile
	write := func(target, name string, vals ...any) {
		var b bytes.Buffer
		b.WriteString("go test fuzz v1\n")
		for _, v := range vals {
			switch v := v.(type) {
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", v)
			case uint8:
				fmt.Fprintf(&b, "byte(%q)\n", v)
			}
		}
		files = append(files, corpusFile{target: target, name: name, content: b.Bytes()})
	}
	damaged := func(name, source string, img []byte) {
		write("FuzzOpen", name, img)
		files[len(files)-1].source = source
	}
	seeds, err := smallNativeSeeds()
	if err != nil {
		return nil, err
	}
	for _, s := range seeds {
		write("FuzzOpen", s.name, sparseInput(s.img))
	}
	for i, fx := range fxs {
		k := fx.kind.String()
		if fx.format == dets.Native {
			// FuzzOpen adds the native fixtures itself (about 100 KiB
			// each); its committed native seeds are the small files of
			// smallNativeSeeds, in the sparse form.
			k = "native-" + k
			write("FuzzRepair", "flips-"+k, uint8(i), []byte{0, 30, 0, 1, 0, 90, 0, 5, 0, 200, 0, 7})
			write("FuzzRepair", "superblock-"+k, uint8(i), []byte{0, 0, 10, 3})
			write("FuzzRepair", "metas-zeroed-"+k, uint8(i), []byte{2, 0, 32, 255, 2, 1, 64, 255})
			write("FuzzRepair", "truncate-"+k, uint8(i), []byte{1, 150, 0, 0})
			// The killed writer's image of the same fixture (repairSources).
			d := uint8(i + 3)
			write("FuzzRepair", "dirty-"+k, d, []byte{})
			write("FuzzRepair", "dirty-flips-"+k, d, []byte{0, 30, 0, 1, 0, 90, 0, 5, 0, 200, 0, 7})
			// 65 zero bytes over a record of either log head page (12288,
			// 16384: docs/format-native.md §3), in damage's scaled offsets.
			var logProg []byte
			for _, at := range []int{12288 + 200, 16384 + 200} {
				o := (at*65536 + len(fx.dirty) - 1) / len(fx.dirty)
				logProg = append(logProg, 2, byte(o>>8), byte(o), 8)
			}
			write("FuzzRepair", "dirty-log-zeroed-"+k, d, logProg)
			continue
		}
		valid := "valid-" + k
		write("FuzzOpen", valid, fx.img)
		flp := binary.BigEndian.Uint32(fx.img)
		damaged("truncated-"+k, valid, fx.img[:flp/2])
		dirty := slices.Clone(fx.img[:flp])
		binary.BigEndian.PutUint32(dirty[8:], 0)
		damaged("dirty-"+k, valid, dirty)
		if i == 0 {
			// A dirty file whose header asks for 2^25 slots (MD5 zeroed,
			// so unchecked): a repair would write 256 MiB of segments.
			big := slices.Clone(fx.img)
			binary.BigEndian.PutUint32(big[8:], 0)
			binary.BigEndian.PutUint32(big[40:], 1<<25)
			binary.BigEndian.PutUint32(big[44:], 1<<25)
			clear(big[168:184])
			damaged("min-slots-2p25-dirty-"+k, valid, big)
		}
		// One 512-byte sector of bucket data zeroed: the one that holds
		// the byte 256 below the end of the data (flp). A fixed sector
		// (2048) lay in the zero part of a segment: no damage at all.
		zeroed := slices.Clone(fx.img)
		at := (int(flp) - 256) / 512 * 512
		clear(zeroed[at:min(at+512, len(zeroed))])
		damaged("zeroed-sector-"+k, valid, zeroed)
		write("FuzzRepair", "flips-"+k, uint8(i), []byte{0, 30, 0, 1, 0, 90, 0, 5, 0, 200, 0, 7})
		write("FuzzRepair", "truncate-"+k, uint8(i), []byte{1, 150, 0, 0})
		write("FuzzRepair", "zero-header-"+k, uint8(i), []byte{2, 0, 0, 22})
	}
	return files, nil
}

// TestCorpusCommitted: the committed otp9 seeds are what the generator
// writes now (the native ones hold random file IDs; TestNativeSeedsCommitted
// checks them), and each damaged FuzzOpen seed differs from the valid seed
// it was made from. The zeroed-sector seeds once equalled their sources.
func TestCorpusCommitted(t *testing.T) {
	files, err := corpusFiles()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]byte{}
	checked := 0
	for _, f := range files {
		byName[f.target+"/"+f.name] = f.content
		if strings.Contains(f.name, "native") {
			continue
		}
		got, err := os.ReadFile(filepath.Join("testdata", "fuzz", f.target, f.name))
		if err != nil || !bytes.Equal(got, f.content) {
			t.Errorf("seed %s/%s is not what the generator writes (%v): GODETS_GEN_CORPUS=1 go test -run TestGenCorpus ./fuzz", f.target, f.name, err)
		}
		checked++
	}
	for _, f := range files {
		if f.source == "" {
			continue
		}
		if bytes.Equal(f.content, byName["FuzzOpen/"+f.source]) {
			t.Errorf("seed %s is its source %s: no damage", f.name, f.source)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d otp9 seeds checked", checked)
	}
}
