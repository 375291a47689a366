package dets

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/etf/matchspec"
)

// The query methods join the list TestTableCallsComplete and
// TestUnusableTable go through.
func init() {
	anyPattern := etf.Atom("_")
	allSpec := etf.List{etf.Tuple{anyPattern, etf.List{}, etf.List{etf.Atom("$_")}}}
	for name, call := range map[string]func(*Table) []error{
		"Select":         func(t *Table) []error { _, err := t.Select(allSpec); return []error{err} },
		"SelectSeq":      func(t *Table) []error { return collect(t.SelectSeq(allSpec)) },
		"Match":          func(t *Table) []error { _, err := t.Match(anyPattern); return []error{err} },
		"MatchSeq":       func(t *Table) []error { return collect(t.MatchSeq(anyPattern)) },
		"MatchObject":    func(t *Table) []error { _, err := t.MatchObject(anyPattern); return []error{err} },
		"MatchObjectSeq": func(t *Table) []error { return collect(t.MatchObjectSeq(anyPattern)) },
		"MatchDelete":    func(t *Table) []error { _, err := t.MatchDelete(anyPattern); return []error{err} },
		"SelectDelete":   func(t *Table) []error { _, err := t.SelectDelete(allSpec); return []error{err} },
		"SelectSpec": func(t *Table) []error {
			s, err := matchspec.Compile(allSpec)
			if err != nil {
				return []error{err}
			}
			return collect(t.SelectSpec(s))
		},
	} {
		tableCalls[name] = call
	}
}

func parseT(t testing.TB, text string) etf.Term {
	t.Helper()
	v, err := etf.Parse(text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return v
}

func termsOf(t testing.TB, texts ...string) []etf.Term {
	out := make([]etf.Term, len(texts))
	for i, s := range texts {
		out[i] = parseT(t, s)
	}
	return out
}

func wantTerms(t testing.TB, what string, got []etf.Term, err error, want ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if d := diffTerms(sortTerms(got), sortTerms(termsOf(t, want...))); d != "" {
		t.Fatalf("%s: %s\ngot  %v\nwant %v", what, d, got, want)
	}
}

// queryTable makes a table of kind with the objects given in Erlang syntax.
func queryTable(t *testing.T, format Format, kind Kind, objs ...string) *Table {
	t.Helper()
	tab := openT(t, tmpFile(t, "q.dets"), Options{Kind: kind, Format: format})
	must(t, tab.Insert(termsOf(t, objs...)...))
	return tab
}

func TestQueriesEachKind(t *testing.T) { forEachFormat(t, testQueriesEachKind) }

func testQueriesEachKind(t *testing.T, format Format) {
	objs := []string{"{a, 1, x}", "{a, 2, y}", "{b, 1, x}", "{c, 3, z}", "{a, 2, y}"}
	for _, c := range []struct {
		kind Kind
		// the table's contents after inserting objs
		stored []string
	}{
		{Set, []string{"{a, 2, y}", "{b, 1, x}", "{c, 3, z}"}},
		{Bag, []string{"{a, 1, x}", "{a, 2, y}", "{b, 1, x}", "{c, 3, z}"}},
		{DuplicateBag, []string{"{a, 1, x}", "{a, 2, y}", "{b, 1, x}", "{c, 3, z}", "{a, 2, y}"}},
	} {
		t.Run(c.kind.String(), func(t *testing.T) {
			tab := queryTable(t, format, c.kind, objs...)
			got, err := tab.MatchObject(etf.Atom("_"))
			wantTerms(t, "MatchObject('_')", got, err, c.stored...)

			var withX, bindings []string
			for _, s := range c.stored {
				o := parseT(t, s).(etf.Tuple)
				if o[2] == etf.Atom("x") {
					withX = append(withX, s)
					bindings = append(bindings, fmt.Sprintf("[%s]", etf.Format(o[0])))
				}
			}
			got, err = tab.MatchObject(parseT(t, "{'_', '_', x}"))
			wantTerms(t, "MatchObject({'_','_',x})", got, err, withX...)
			got, err = tab.Match(parseT(t, "{'$1', '_', x}"))
			wantTerms(t, "Match({'$1','_',x})", got, err, bindings...)
			got, err = tab.Select(parseT(t, "[{{'$1', '$2', '_'}, [], [{{'$2', '$1'}}]}]"))
			var swapped []string
			for _, s := range c.stored {
				o := parseT(t, s).(etf.Tuple)
				swapped = append(swapped, etf.Format(etf.Tuple{o[1], o[0]}))
			}
			wantTerms(t, "Select swap", got, err, swapped...)

			var keyA []string
			for _, s := range c.stored {
				if parseT(t, s).(etf.Tuple)[0] == etf.Atom("a") {
					keyA = append(keyA, s)
				}
			}
			got, err = tab.MatchObject(parseT(t, "{a, '_', '_'}"))
			wantTerms(t, "MatchObject bound key", got, err, keyA...)

			// select_delete: the objects whose second element is 1.
			var kept []string
			deleted := 0
			for _, s := range c.stored {
				if parseT(t, s).(etf.Tuple)[1] == etf.Int(1) {
					deleted++
				} else {
					kept = append(kept, s)
				}
			}
			n, err := tab.SelectDelete(parseT(t, "[{{'_', 1, '_'}, [], [true]}]"))
			must(t, err)
			if n != deleted {
				t.Fatalf("SelectDelete deleted %d, want %d", n, deleted)
			}
			mustCheck(t, tab)
			wantTerms(t, "after SelectDelete", tableObjects(t, tab), nil, kept...)
			in, err := tab.Info()
			must(t, err)
			if in.Size != len(kept) {
				t.Fatalf("Info.Size %d after SelectDelete, want %d", in.Size, len(kept))
			}
		})
	}
}

// TestSelectDeleteResultMustBeTrue: only the atom true deletes; any other
// result, truthy or not, keeps the object, as in OTP.
func TestSelectDeleteResultMustBeTrue(t *testing.T) {
	forEachFormat(t, testSelectDeleteResultMustBeTrue)
}

func testSelectDeleteResultMustBeTrue(t *testing.T, format Format) {
	tab := queryTable(t, format, Set, "{1, a}", "{2, b}", "{3, c}")
	n, err := tab.SelectDelete(parseT(t, "[{{'$1', a}, [], [yes]}, {{'$1', b}, [], ['$_']}, {{'$1', c}, [], [true]}]"))
	must(t, err)
	if n != 1 {
		t.Fatalf("SelectDelete deleted %d, want 1", n)
	}
	wantTerms(t, "left", tableObjects(t, tab), nil, "{1, a}", "{2, b}")
}

// TestMatchDeleteDuplicates: a duplicate bag's copies all go, and each
// counts, as OTP's select_delete counts them.
func TestMatchDeleteDuplicates(t *testing.T) { forEachFormat(t, testMatchDeleteDuplicates) }

func testMatchDeleteDuplicates(t *testing.T, format Format) {
	tab := queryTable(t, format, DuplicateBag, "{k, 1}", "{k, 1}", "{k, 2}", "{j, 1}", "{k, 1}")
	n, err := tab.MatchDelete(parseT(t, "{'_', 1}"))
	must(t, err)
	if n != 4 {
		t.Fatalf("MatchDelete deleted %d, want 4", n)
	}
	wantTerms(t, "left", tableObjects(t, tab), nil, "{k, 2}")
	n, err = tab.MatchDelete(parseT(t, "{k, 2}"))
	must(t, err)
	if n != 1 {
		t.Fatalf("bound-key MatchDelete deleted %d, want 1", n)
	}
	wantTerms(t, "left", tableObjects(t, tab), nil)
}

// TestSelectDeleteAllResets: [{'_',[],[true]}] empties the table down to
// its minimum slot count, as OTP's delete_all_objects shortcut does.
func TestSelectDeleteAllResets(t *testing.T) { forEachFormat(t, testSelectDeleteAllResets) }

func testSelectDeleteAllResets(t *testing.T, format Format) {
	tab := openT(t, tmpFile(t, "all.dets"), Options{Format: format})
	for i := range 3000 {
		must(t, tab.Insert(tup(etf.Int(i), etf.Int(i))))
	}
	before, err := tab.Info()
	must(t, err)
	n, err := tab.SelectDelete(parseT(t, "[{'_', [], [true]}]"))
	must(t, err)
	if n != 3000 {
		t.Fatalf("deleted %d, want 3000", n)
	}
	after, err := tab.Info()
	must(t, err)
	if after.Size != 0 || after.NoSlots.Next != after.NoSlots.Min || before.NoSlots.Next == after.NoSlots.Next {
		t.Fatalf("after delete all: size %d, slots %+v (before %+v)", after.Size, after.NoSlots, before.NoSlots)
	}
	mustCheck(t, tab)
}

// TestQueryBoundKeysReadOnlyTheirSlots: a bound-key query reads only the
// buckets of its keys, so a damaged bucket elsewhere does not stop it,
// while a scan reports it.
func TestQueryBoundKeysReadOnlyTheirSlots(t *testing.T) {
	forEachFormat(t, testQueryBoundKeysReadOnlyTheirSlots)
}

func testQueryBoundKeysReadOnlyTheirSlots(t *testing.T, format Format) {
	path := tmpFile(t, "bound.dets")
	tab := openT(t, path, Options{Format: format})
	for i := range 64 {
		must(t, tab.Insert(tup(etf.Int(i), bin("value"))))
	}
	// Damage the bucket of key 7 in place: its object's body becomes
	// undecodable while the bucket header stays intact.
	tab.mu.Lock()
	slot := tab.slotFor(tab.hashKey(etf.Int(7)))
	e, err := tab.entry(slot)
	tab.mu.Unlock()
	must(t, err)
	must(t, tab.Close())
	raw := readFileT(t, path)
	for i := int(e.ptr) + bucketHeaderSize + 4; i < int(e.ptr)+int(e.size); i++ {
		raw[i] = 0xff
	}
	must(t, os.WriteFile(path, raw, 0o644))
	tab, err = Open(path, Options{Format: format, ReadOnly: true})
	must(t, err)
	t.Cleanup(func() { tab.Close() })

	other := 8
	if tab.slotFor(tab.hashKey(etf.Int(int64(other)))) == slot {
		other = 9
	}
	got, err := tab.MatchObject(tup(etf.Int(int64(other)), etf.Atom("_")))
	wantTerms(t, "bound-key MatchObject", got, err, fmt.Sprintf("{%d, <<\"value\">>}", other))
	got, err = tab.Select(parseT(t, fmt.Sprintf("[{{%d, '$1'}, [], ['$1']}, {{%d, '_'}, [], [found]}]", other, other)))
	wantTerms(t, "bound-key Select", got, err, `<<"value">>`)
	if _, err := tab.MatchObject(tup(etf.Atom("_"), etf.Atom("_"))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("scan over a damaged bucket: %v, want ErrCorrupt", err)
	}
	if _, err := tab.MatchObject(tup(etf.Int(7), etf.Atom("_"))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bound-key query of the damaged bucket: %v, want ErrCorrupt", err)
	}
}

// TestQueryNumericKeysLikeOTP: bound keys that are == but not =:= (1 and
// 1.0) are looked up once, the last clause's, as dets does (lists:usort).
func TestQueryNumericKeysLikeOTP(t *testing.T) { forEachFormat(t, testQueryNumericKeysLikeOTP) }

func testQueryNumericKeysLikeOTP(t *testing.T, format Format) {
	tab := queryTable(t, format, Set, "{1, int}", "{1.0, float}")
	got, err := tab.Select(parseT(t, "[{{1, '$1'}, [], ['$1']}, {{1.0, '$1'}, [], ['$1']}]"))
	wantTerms(t, "keys 1, 1.0", got, err, "float")
	got, err = tab.Select(parseT(t, "[{{1.0, '$1'}, [], ['$1']}, {{1, '$1'}, [], ['$1']}]"))
	wantTerms(t, "keys 1.0, 1", got, err, "int")
	got, err = tab.MatchObject(parseT(t, "{1, '_'}"))
	wantTerms(t, "key 1", got, err, "{1, int}")
}

// TestQueryZeroFloatKeys: a lookup of -0.0 finds the key 0.0 (=:= in
// OTP 25), but a pattern's -0.0 matches only -0.0, bit for bit: OTP's
// dets:match_object(T, {-0.0, '_'}) on {0.0, x} gives []. Seed
// 1796227809074095994 of TestQueryOTPDifferential found the shortcut
// that returned the lookup.
func TestQueryZeroFloatKeys(t *testing.T) { forEachFormat(t, testQueryZeroFloatKeys) }

func testQueryZeroFloatKeys(t *testing.T, format Format) {
	for _, kind := range []Kind{Set, Bag} {
		tab := queryTable(t, format, kind, "{0.0, x}")
		got, err := tab.MatchObject(parseT(t, "{-0.0, '_'}"))
		wantTerms(t, kind.String()+" match_object {-0.0, '_'}", got, err)
		got, err = tab.MatchObject(parseT(t, "{0.0, '_'}"))
		wantTerms(t, kind.String()+" match_object {0.0, '_'}", got, err, "{0.0, x}")
		got, err = tab.Lookup(parseT(t, "-0.0"))
		wantTerms(t, kind.String()+" lookup -0.0", got, err, "{0.0, x}")
	}
}

func TestQueryReadOnlyRefusesDeletes(t *testing.T) { forEachFormat(t, testQueryReadOnlyRefusesDeletes) }

func testQueryReadOnlyRefusesDeletes(t *testing.T, format Format) {
	path := tmpFile(t, "ro.dets")
	tab := openT(t, path, Options{Format: format})
	must(t, tab.Insert(tup(etf.Int(1), etf.Int(2))))
	must(t, tab.Close())
	hash := fileHash(t, path)
	ro := openT(t, path, Options{Format: format, ReadOnly: true})
	for name, del := range map[string]func() (int, error){
		"SelectDelete":     func() (int, error) { return ro.SelectDelete(parseT(t, "[{{'_', 2}, [], [true]}]")) },
		"SelectDelete all": func() (int, error) { return ro.SelectDelete(parseT(t, "[{'_', [], [true]}]")) },
		"MatchDelete":      func() (int, error) { return ro.MatchDelete(parseT(t, "{1, '_'}")) },
		"MatchDelete all":  func() (int, error) { return ro.MatchDelete(etf.Atom("_")) },
	} {
		if n, err := del(); !errors.Is(err, ErrReadOnly) || n != 0 {
			t.Errorf("%s on a read-only table: %d, %v; want 0, ErrReadOnly", name, n, err)
		}
	}
	must(t, ro.Close())
	if fileHash(t, path) != hash {
		t.Fatal("a refused delete changed the file")
	}
}

func TestQueryBadSpec(t *testing.T) { forEachFormat(t, testQueryBadSpec) }

func testQueryBadSpec(t *testing.T, format Format) {
	tab := queryTable(t, format, Set, "{1, 2}")
	for _, text := range []string{"not_a_list", "[{'_', [], []}]", "[{'_'}]", "[{'_', notalist, [true]}]"} {
		ms := parseT(t, text)
		_, err := tab.Select(ms)
		var ce *matchspec.CompileError
		if !errors.Is(err, ErrBadArgument) || !errors.Is(err, matchspec.ErrBadSpec) || !errors.As(err, &ce) {
			t.Errorf("Select(%s): %v, want ErrBadArgument and a *matchspec.CompileError", text, err)
		}
		if n, err := tab.SelectDelete(ms); n != 0 || !errors.Is(err, matchspec.ErrBadSpec) {
			t.Errorf("SelectDelete(%s): %d, %v, want ErrBadSpec", text, n, err)
		}
		if errs := collect(tab.SelectSeq(ms)); len(errs) != 1 || !errors.Is(errs[0], ErrBadArgument) {
			t.Errorf("SelectSeq(%s) yields %v, want one ErrBadArgument", text, errs)
		}
	}
	if errs := collect(tab.SelectSpec(nil)); len(errs) != 1 || !errors.Is(errs[0], ErrBadArgument) {
		t.Errorf("SelectSpec(nil) yields %v, want one ErrBadArgument", errs)
	}
	wantTerms(t, "left", tableObjects(t, tab), nil, "{1, 2}")
}

// TestQuerySeqStopsAndAllowsWrites: the iterator stops when the loop
// breaks, and its body may write to the table.
func TestQuerySeqStopsAndAllowsWrites(t *testing.T) {
	forEachFormat(t, testQuerySeqStopsAndAllowsWrites)
}

func testQuerySeqStopsAndAllowsWrites(t *testing.T, format Format) {
	tab := openT(t, tmpFile(t, "seq.dets"), Options{Format: format})
	for i := range 500 {
		must(t, tab.Insert(tup(etf.Int(i), etf.Int(i%2))))
	}
	seen := 0
	for obj, err := range tab.MatchObjectSeq(tup(etf.Atom("_"), etf.Int(0))) {
		must(t, err)
		must(t, tab.DeleteObject(obj)) // the body may use the table
		if seen++; seen == 100 {
			break
		}
	}
	got, err := tab.MatchObject(tup(etf.Atom("_"), etf.Int(0)))
	must(t, err)
	if seen != 100 || len(got) != 150 {
		t.Fatalf("saw %d, %d even objects left; want 100 and 150", seen, len(got))
	}
	// Results are fresh terms: changing one changes nothing stored.
	res, err := tab.Select(parseT(t, "[{{'$1', 1}, [], ['$_']}]"))
	must(t, err)
	res[0].(etf.Tuple)[1] = etf.Atom("changed")
	again, err := tab.Select(parseT(t, "[{{'$1', 1}, [], ['$_']}]"))
	must(t, err)
	if slices.ContainsFunc(again, func(o etf.Term) bool { return o.(etf.Tuple)[1] == etf.Atom("changed") }) {
		t.Fatal("a result aliases the table's state")
	}
}

// TestQueryBoundKeyAllocs: a bound-key MatchObject costs what compiling
// its pattern, finding its key, running it and one Lookup cost, plus its
// result slice; the query layer
// adds no allocations of its own (iterators, key lists, spec wrappers).
func TestQueryBoundKeyAllocs(t *testing.T) { forEachFormat(t, testQueryBoundKeyAllocs) }

func testQueryBoundKeyAllocs(t *testing.T, format Format) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	tab := openT(t, tmpFile(t, "qallocs.dets"), Options{Format: format})
	for i := range 1000 {
		must(t, tab.Insert(benchObj(i)))
	}
	var key etf.Term = benchKey(500)
	// '$1' keeps the pattern off keyObjects' shortcut.
	var pattern etf.Term = tup(key, etf.Atom("$1"))
	compile := testing.AllocsPerRun(200, func() {
		if _, err := matchspec.MatchSpec(pattern, matchspec.Object); err != nil {
			t.Fatal(err)
		}
	})
	s, err := matchspec.MatchSpec(pattern, matchspec.Object)
	must(t, err)
	var obj etf.Term = benchObj(500)
	run := testing.AllocsPerRun(200, func() {
		if _, ok := s.Run(obj); !ok {
			t.Fatal("the pattern does not match")
		}
	})
	keys := testing.AllocsPerRun(200, func() {
		if _, ok := s.BoundKeys(1); !ok {
			t.Fatal("the key is not bound")
		}
	})
	lookup := testing.AllocsPerRun(200, func() {
		if objs, err := tab.Lookup(key); err != nil || len(objs) != 1 {
			t.Fatal(objs, err)
		}
	})
	n := testing.AllocsPerRun(200, func() {
		if objs, err := tab.MatchObject(pattern); err != nil || len(objs) != 1 {
			t.Fatal(objs, err)
		}
	})
	var plainPattern etf.Term = tup(key, etf.Atom("_"))
	plain := testing.AllocsPerRun(200, func() {
		if objs, err := tab.MatchObject(plainPattern); err != nil || len(objs) != 1 {
			t.Fatal(objs, err)
		}
	})
	if plain > lookup {
		t.Errorf("MatchObject({Key, '_'}): %v allocations, Lookup %v; want no more", plain, lookup)
	}
	if extra := n - compile - keys - run - lookup; extra > 1 {
		t.Errorf("MatchObject with a bound key: %v allocations, %v beyond compiling (%v), BoundKeys (%v), running (%v) and Lookup (%v); want <= 1",
			n, extra, compile, keys, run, lookup)
	}
}

// TestMatchObjectKeyShortcut: MatchObject's shortcut for {Key, '_', ...}
// returns what the compiled pattern returns, for every kind, for keys of
// each type it takes and for patterns it must leave to the compiler.
func TestMatchObjectKeyShortcut(t *testing.T) { forEachFormat(t, testMatchObjectKeyShortcut) }

func testMatchObjectKeyShortcut(t *testing.T, format Format) {
	keys := []etf.Term{etf.Int(1), etf.Float(1), etf.Float(0), etf.Float(-0.0 * -1), parseT(t, "123456789012345678901234567890"),
		bin("k"), etf.Atom("a"), etf.Atom("$1"), etf.Atom("_"), tup(etf.Int(1)), etf.List{etf.Int(1)}}
	for _, kind := range allKinds {
		t.Run(kind.String(), func(t *testing.T) {
			tab := openT(t, tmpFile(t, "short.dets"), Options{Format: format, Kind: kind})
			for i, k := range keys {
				must(t, tab.Insert(tup(k, etf.Int(int64(i))), tup(k, etf.Int(int64(i)), etf.Atom("three")), tup(k, etf.Int(int64(i)))))
			}
			for _, k := range append(keys, etf.Atom("absent")) {
				for _, p := range []etf.Term{tup(k, etf.Atom("_")), tup(k, etf.Atom("_"), etf.Atom("_")), tup(k), tup(k, etf.Atom("$1")), tup(k, etf.Int(0))} {
					got, err := tab.MatchObject(p)
					must(t, err)
					s, err := matchspec.MatchSpec(p, matchspec.Object)
					must(t, err)
					var want []etf.Term
					for o, err := range tab.SelectSpec(s) {
						must(t, err)
						want = append(want, o)
					}
					if d := diffTerms(sortTerms(got), sortTerms(want)); d != "" {
						t.Errorf("MatchObject(%s): %v, the compiled pattern gives %v: %s", etf.Format(p), got, want, d)
					}
				}
			}
		})
	}
}
