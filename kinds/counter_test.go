package kinds

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/exclusive"
	"github.com/godets/godets/internal/testutil/tabletest"
)

// counterTable opens a set at a path the test can read the bytes of.
func counterTable(t *testing.T) (*dets.Table, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "counter.dets")
	return tabletest.OpenT(t, path, dets.Options{}), path
}

// fileBytes syncs the table and returns its file's bytes.
func fileBytes(t *testing.T, tab *dets.Table, path string) []byte {
	t.Helper()
	must(t, tab.Sync())
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkOutOfRange stores start under a key, asks for start+incr, and
// requires ErrOutOfRange with the stored value and the file's bytes as
// they were.
func checkOutOfRange[T integer](t *testing.T, c Codec[T], start T, incr int64) {
	t.Helper()
	tab, path := counterTable(t)
	s, err := NewSet(tab, String, c)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Insert("n", start))
	before := fileBytes(t, tab, path)
	v, err := s.UpdateCounter("n", incr)
	var oe *OutOfRangeError
	if !errors.Is(err, ErrOutOfRange) || !errors.As(err, &oe) || errors.Is(err, ErrNotFound) {
		t.Fatalf("%T %v%+d: UpdateCounter = %v, %v; want ErrOutOfRange", start, start, incr, v, err)
	}
	if got := exclusive.Code(err); got != "out_of_range" {
		t.Errorf("exclusive.Code = %q, want out_of_range", got)
	}
	if got, err := s.Lookup("n"); err != nil || got != start {
		t.Fatalf("%T %v%+d: after the refusal Lookup = %v, %v; want %v", start, start, incr, got, err, start)
	}
	if after := fileBytes(t, tab, path); !bytes.Equal(before, after) {
		t.Fatalf("%T %v%+d: the refused update changed the file", start, start, incr)
	}
}

// checkInRange requires start+incr to succeed with want.
func checkInRange[T integer](t *testing.T, c Codec[T], start T, incr int64, want T) {
	t.Helper()
	tab, _ := counterTable(t)
	s, err := NewSet(tab, String, c)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Insert("n", start))
	if v, err := s.UpdateCounter("n", incr); err != nil || v != want {
		t.Fatalf("%T %v%+d: UpdateCounter = %v, %v; want %v", start, start, incr, v, err, want)
	}
	if v, err := s.Lookup("n"); err != nil || v != want {
		t.Fatalf("%T %v%+d: Lookup = %v, %v; want %v", start, start, incr, v, err, want)
	}
}

// TestUpdateCounterOutOfRange: a typed counter never writes a value its
// codec cannot read back, for every integer codec, at both ends.
func TestUpdateCounterOutOfRange(t *testing.T) {
	checkOutOfRange(t, Int, math.MaxInt64, 1)
	checkOutOfRange(t, Int, math.MinInt64, -1)
	checkOutOfRange(t, Int, 1, math.MaxInt64)
	checkOutOfRange(t, Int, -2, math.MinInt64)
	checkOutOfRange(t, Integer[int](), math.MaxInt, 1)
	checkOutOfRange(t, Integer[int32](), math.MaxInt32, 1)
	checkOutOfRange(t, Integer[int32](), math.MinInt32, -1)
	checkOutOfRange(t, Integer[int8](), -128, -1)
	checkOutOfRange(t, Integer[uint8](), 255, 1)
	checkOutOfRange(t, Integer[uint8](), 0, -1)
	checkOutOfRange(t, Integer[uint16](), 3, -4)
	checkOutOfRange(t, Integer[uint32](), math.MaxUint32, 1)
	checkOutOfRange(t, Integer[uint64](), math.MaxUint64, 1)
	checkOutOfRange(t, Integer[uint64](), 0, -1)
	checkOutOfRange(t, Integer[uint](), 5, math.MinInt64)

	checkInRange(t, Int, math.MaxInt64-1, 1, math.MaxInt64)
	checkInRange(t, Int, math.MinInt64+1, -1, math.MinInt64)
	checkInRange(t, Int, 0, math.MinInt64, math.MinInt64)
	checkInRange(t, Integer[uint8](), 254, 1, 255)
	checkInRange(t, Integer[uint8](), 1, -1, 0)
	checkInRange(t, Integer[uint64](), math.MaxInt64, 1, math.MaxInt64+1) // a bignum in the file
	checkInRange(t, Integer[uint64](), math.MaxUint64, -1, math.MaxUint64-1)
}

// TestUpdateCounterOutOfRangeMessage: the error names the refused result
// and what the codec accepts.
func TestUpdateCounterOutOfRangeMessage(t *testing.T) {
	tab, _ := counterTable(t)
	s, err := NewSet(tab, String, Int)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Insert("n", math.MaxInt64))
	_, err = s.UpdateCounter("n", 1)
	want := "kinds: counter result 9223372036854775808 is out of range: the value codec expects integer in int64 range; the counter is unchanged"
	if err == nil || err.Error() != want {
		t.Fatalf("error %q,\nwant  %q", err, want)
	}
}

// TestUpdateCounterRawWritersRacing: raw writers that keep putting the
// counter back at the limit race with typed updates that would pass it.
// The check is part of the engine's update, so a raw reader never finds a
// value past int64 (the old check-then-write-then-undo showed one for a
// moment), and every typed update either fits or is refused.
func TestUpdateCounterRawWritersRacing(t *testing.T) {
	tab, _ := counterTable(t)
	s, err := NewSet(tab, String, Int)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Insert("n", math.MaxInt64))
	const rounds = 3000
	done := make(chan struct{})
	errs := make(chan error, 3)
	go func() { // the raw writer
		for i := 0; ; i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			v := int64(math.MaxInt64) - int64(i%2)
			if err := tab.Insert(etf.Tuple{etf.Binary("n"), etf.Int(v)}); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() { // the raw reader
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			objs, err := tab.Lookup(etf.Binary("n"))
			if err != nil {
				errs <- err
				return
			}
			if _, big := objs[0].(etf.Tuple)[1].(*etf.BigInt); big {
				errs <- fmt.Errorf("a reader found %v, past int64", objs[0])
				return
			}
		}
	}()
	// Run until both outcomes were seen often, within a bound.
	accepted, refused := 0, 0
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < rounds || accepted < rounds/10 || refused < rounds/10; i++ {
		if time.Now().After(deadline) {
			break
		}
		switch _, err := s.UpdateCounter("n", 1); {
		case err == nil:
			accepted++
		case errors.Is(err, ErrOutOfRange):
			refused++
		default:
			t.Fatalf("UpdateCounter: %v", err)
		}
		runtime.Gosched()
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d updates accepted, %d refused at the limit", accepted, refused)
	if accepted == 0 || refused == 0 {
		t.Fatalf("%d accepted, %d refused: the test raced nothing", accepted, refused)
	}
}

// TestUpdateCounterRawKeepsBignums: the raw engine still lets a counter
// grow past int64, as OTP does; only the typed handle refuses.
func TestUpdateCounterRawKeepsBignums(t *testing.T) {
	tab, _ := counterTable(t)
	must(t, tab.Insert(etf.Tuple{etf.Binary("n"), etf.Int(math.MaxInt64)}))
	n, err := tab.UpdateCounter(etf.Binary("n"), 2, 1)
	if _, ok := n.(*etf.BigInt); err != nil || !ok || etf.Format(n) != "9223372036854775808" {
		t.Fatalf("raw UpdateCounter = %v, %v", n, err)
	}
}

// TestUpdateCounterConcurrentAtLimit: typed counter updates racing to the
// limit each see the last one's result, so exactly the ones that fit
// succeed and a concurrent reader never finds a value out of range.
func TestUpdateCounterConcurrentAtLimit(t *testing.T) {
	tab, _ := counterTable(t)
	s, err := NewSet(tab, String, Int)
	if err != nil {
		t.Fatal(err)
	}
	const room, workers = 10, 20
	must(t, s.Insert("n", math.MaxInt64-room))
	done := make(chan struct{})
	readerErr := make(chan error, 1)
	go func() {
		defer close(readerErr)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := s.Lookup("n"); err != nil {
				readerErr <- err
				return
			}
		}
	}()
	results := make(chan error, workers)
	for range workers {
		go func() {
			_, err := s.UpdateCounter("n", 1)
			results <- err
		}()
	}
	ok, refused := 0, 0
	for range workers {
		switch err := <-results; {
		case err == nil:
			ok++
		case errors.Is(err, ErrOutOfRange):
			refused++
		default:
			t.Errorf("UpdateCounter: %v", err)
		}
	}
	close(done)
	if err := <-readerErr; err != nil {
		t.Fatalf("a reader saw an out-of-range counter: %v", err)
	}
	if ok != room || refused != workers-room {
		t.Fatalf("%d updates succeeded and %d were refused, want %d and %d", ok, refused, room, workers-room)
	}
	if v, err := s.Lookup("n"); err != nil || v != math.MaxInt64 {
		t.Fatalf("Lookup = %d, %v; want MaxInt64", v, err)
	}
}
