package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
)

func init() {
	tableCalls["CheckStructure"] = func(t *Table) []error { return []error{t.CheckStructure()} }
}

// secretObjects returns objects whose every text carries a marker that
// the redacted copy must not contain, and the markers.
func secretObjects(rng *rand.Rand, n int) ([]etf.Term, [][]byte) {
	var objs []etf.Term
	var secrets [][]byte
	for i := range n {
		s := fmt.Sprintf("secret%05d%c", i, 'a'+rng.Intn(26))
		secrets = append(secrets, []byte(s))
		key := etf.Term(etf.Binary("key-" + s))
		if i%3 == 1 {
			key = etf.Atom("atom_" + s)
		}
		val := etf.Tuple{
			etf.Str("str_" + s),
			etf.Map{{Key: etf.Binary("m1" + s), Value: etf.Int(i)}, {Key: etf.Binary("m2" + s), Value: etf.Float(float64(i) / 7)}},
			etf.NewBigInt(new(big.Int).Lsh(big.NewInt(int64(i+1)), 70)),
			etf.Int(rng.Intn(1 << 30)),
			etf.List{etf.Atom("la_" + s), etf.Binary(s)},
		}
		objs = append(objs, tup(key, val, etf.Int(i%5)))
	}
	return objs, secrets
}

// verdict is what CheckStructure (or the open) says of a file, as the
// sorted sections and offsets of the problems.
func verdict(t *testing.T, path string) string {
	t.Helper()
	tab, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		return "open: " + problemsOf(err)
	}
	defer tab.Close()
	return problemsOf(tab.CheckStructure())
}

func problemsOf(err error) string {
	if err == nil {
		return "ok"
	}
	var out []string
	var walk func(error)
	walk = func(e error) {
		var ce *CorruptionError
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if errors.As(e, &ce) {
			out = append(out, fmt.Sprintf("%s@%d", ce.Section, ce.Offset))
			return
		}
		for _, s := range []error{ErrNotDETS, ErrNeedsRepair, ErrCorrupt, ErrBadTypeCode} {
			if errors.Is(e, s) {
				out = append(out, s.Error())
				return
			}
		}
		out = append(out, "other")
	}
	walk(err)
	slices.Sort(out)
	return strings.Join(out, " ")
}

func redactFile(t *testing.T, src, dst string) RedactStats {
	t.Helper()
	im, err := ReadImage(src)
	must(t, err)
	red, st, err := im.Redact()
	must(t, err)
	must(t, os.WriteFile(dst, red.Bytes(), 0o644))
	return st
}

// TestRedactKeepsVerdict: for a sound file and for files damaged in
// several ways, the redacted copy has the original's CheckStructure
// verdict, its size and counts, and none of its key or value texts.
func TestRedactKeepsVerdict(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag} {
		rng := rand.New(rand.NewSource(seed))
		dir := t.TempDir()
		orig := dir + "/orig.dets"
		tab := openT(t, orig, Options{Kind: kind})
		objs, secrets := secretObjects(rng, 400)
		must(t, tab.Insert(objs...))
		for i := 0; i < len(objs); i += 4 { // freed buckets keep old objects
			k, _ := keyOf(objs[i], 1)
			must(t, tab.Delete(k))
		}
		must(t, tab.Close())
		base := readFileT(t, orig)
		im, err := NewImage(base)
		must(t, err)
		var bucketAt, objAt int64
		im.slots(func(e SlotEntry) {
			if e.Size > 0 && bucketAt == 0 {
				bucketAt = e.Ptr
			}
		})
		objAt = bucketAt + bucketHeaderSize
		if kind != Set {
			objAt += 4
		}
		damages := map[string]func(b []byte){
			"sound":         func([]byte) {},
			"bucket status": func(b []byte) { be.PutUint32(b[bucketAt+4:], 0xdeadbeef) },
			"object size":   func(b []byte) { be.PutUint32(b[objAt:], 2) },
			"object tag":    func(b []byte) { b[objAt+5] = 0xee },
			"object count":  func(b []byte) { be.PutUint32(b[offNoObjects:], be.Uint32(b[offNoObjects:])+1); fixMD5(b) },
			"free list":     func(b []byte) { be.PutUint32(b[be.Uint32(b)+8:], 40) },
			"not closed":    func(b []byte) { be.PutUint32(b[offClosed:], notProperlyClosed) },
		}
		for name, damage := range damages {
			t.Run(kind.String()+"/"+name, func(t *testing.T) {
				b := slices.Clone(base)
				damage(b)
				src, dst := dir+"/"+strings.ReplaceAll(name, " ", "_")+".dets", dir+"/red-"+strings.ReplaceAll(name, " ", "_")+".dets"
				must(t, os.WriteFile(src, b, 0o644))
				st := redactFile(t, src, dst)
				got, want := verdict(t, dst), verdict(t, src)
				t.Logf("verdict %s", want)
				if got != want {
					t.Errorf("redacted copy: %s; original: %s", got, want)
				}
				red := readFileT(t, dst)
				if len(red) != len(b) {
					t.Errorf("redacted copy has %d bytes, original %d", len(red), len(b))
				}
				for i, s := range secrets {
					if bytes.Contains(red, s) {
						t.Fatalf("redacted copy contains %q (stats %+v)", s, st)
					}
					if name == "sound" && i%4 != 0 && !bytes.Contains(b, s) {
						t.Fatalf("original lacks %q: the search proves nothing", s)
					}
				}
				if st.Objects == 0 || st.ContentBytes == 0 {
					t.Errorf("stats %+v", st)
				}
			})
		}
	}
}

// TestCheckStructureSkipsOnlyContent: a redacted copy of a sound file
// fails Check (its keys hash elsewhere) but passes CheckStructure, which
// still finds structural damage.
func TestCheckStructureSkipsOnlyContent(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	dir := t.TempDir()
	tab := openT(t, dir+"/o.dets", Options{})
	objs, _ := secretObjects(rng, 100)
	must(t, tab.Insert(objs...))
	must(t, tab.Close())
	redactFile(t, dir+"/o.dets", dir+"/r.dets")
	red, err := Open(dir+"/r.dets", Options{ReadOnly: true})
	must(t, err)
	if err := red.Check(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check of a redacted copy: %v (keys should hash to other slots)", err)
	}
	must(t, red.CheckStructure())
	must(t, red.Close())
	b := readFileT(t, dir+"/r.dets")
	be.PutUint32(b[offNoObjects:], be.Uint32(b[offNoObjects:])+1)
	fixMD5(b)
	must(t, os.WriteFile(dir+"/r.dets", b, 0o644))
	if v := verdict(t, dir+"/r.dets"); v != "header@32" {
		t.Errorf("CheckStructure of a wrong key count: %s", v)
	}
}

// fixMD5 recomputes the header's MD5 after a test changed a field.
func fixMD5(b []byte) {
	h := decodeHeader(b)
	h.encode(b)
}

// TestImageLayout: the header fields, slot entries, regions and bucket
// annotations agree with what the table itself knows.
func TestImageLayout(t *testing.T) {
	path := tmpFile(t, "l.dets")
	tab := openT(t, path, Options{Kind: Bag})
	for i := range 300 {
		must(t, tab.Insert(tup(etf.Int(i%100), bin(strings.Repeat("v", i%40)), etf.Float(1.5), etf.Int(i))))
	}
	key := etf.Int(7)
	e, err := tab.entry(tab.slotFor(keyHash(key)))
	must(t, err)
	slot := int64(tab.slotFor(keyHash(key)))
	must(t, tab.Close())
	im, err := ReadImage(path)
	must(t, err)
	fields := map[string]uint64{}
	for _, f := range im.HeaderFields() {
		fields[f.Name] = f.Value
	}
	if fields["objects"] != 300 || fields["keys"] != 100 || fields["type"] != typeBag || fields["cookie"] != cookie {
		t.Errorf("header fields %v", fields)
	}
	se, err := im.Slot(slot)
	must(t, err)
	if se.Size != int64(e.size) || se.Ptr != int64(e.ptr) {
		t.Errorf("slot %d: image %+v, table %+v", slot, se, e)
	}
	if r := im.RegionOf(se.Ptr + 9); r.Name != "bucket" || r.Index != slot {
		t.Errorf("region of a bucket byte: %v", r)
	}
	rows := im.AnnotateBucket(se.Ptr, se.Size)
	at := se.Ptr
	for _, r := range rows {
		if r.Offset != at {
			t.Fatalf("annotation rows skip or overlap at %d: %+v", at, r)
		}
		if strings.HasPrefix(r.Label, "not a term") || strings.Contains(r.Label, "out of range") {
			t.Fatalf("sound bucket annotated as damaged: %+v", r)
		}
		at += int64(len(r.Bytes))
	}
	if at != se.Ptr+se.Size {
		t.Errorf("annotations end at %d, bucket at %d", at, se.Ptr+se.Size)
	}
	if _, err := im.Slot(1 << 24); !errors.Is(err, ErrNoSuchSlot) {
		t.Errorf("slot beyond the table: %v", err)
	}
	if ls, err := im.FreeLists(); err != nil || len(ls) == 0 {
		t.Errorf("free lists %v, %v", ls, err)
	}
	if _, err := NewImage(make([]byte, 100)); !errors.Is(err, ErrImageTooShort) {
		t.Errorf("short image: %v", err)
	}
}
