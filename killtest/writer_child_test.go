package killtest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/exclusive"
	"github.com/godets/godets/internal/model"
)

// The writer's key space: enough keys that tables grow past the first
// 256 slots, few values so bags and duplicate_bags see repeated objects.
const (
	writerKeys     = 1500
	writerCounters = 16
	writerMaxOps   = 100000
)

// writer is the child that runs a seeded mix of calls and logs each one:
// "i S op args" before the call, "i D op result" after it returned.
type writer struct {
	rng  *rand.Rand
	log  *ackLog
	m    *model.Model
	kind dets.Kind
	n    int // calls issued
}

// envFormat is the format of childFormatEnv.
func envFormat() dets.Format {
	if os.Getenv(childFormatEnv) == "native" {
		return dets.Native
	}
	return dets.OTP9
}

func envKind() dets.Kind {
	k, _ := strconv.Atoi(os.Getenv(childKindEnv))
	return dets.Kind(k)
}

func writerChild() int {
	path := os.Getenv(childPathEnv)
	seed, _ := strconv.ParseUint(os.Getenv(childSeedEnv), 10, 64)
	log, err := createAckLog(os.Getenv(childLogEnv))
	if err != nil {
		fmt.Println("error:", err)
		return 3
	}
	w := &writer{rng: rand.New(rand.NewPCG(seed, 0x6b696c6c)), log: log, kind: envKind()}
	w.m = model.New(model.Kind(w.kind), 1)
	if err := w.load(path); err != nil {
		fmt.Println("error: load:", err)
		return 3
	}
	fmt.Println("ready")
	topts := dets.Options{Kind: w.kind, Format: envFormat()}
	for w.n < writerMaxOps {
		var err error
		if os.Getenv(childModeEnv) == "exclusive" {
			err = exclusive.With(path, exclusive.Options{Wait: exclusive.WaitUpTo(10 * time.Second), Table: topts}, w.session)
		} else {
			var t *dets.Table
			if t, err = dets.Open(path, topts); err == nil {
				if err = w.session(t); err == nil {
					err = t.Close()
				} else {
					_ = t.Close()
				}
			}
		}
		if err == nil {
			err = w.log.add(strconv.Itoa(w.n-1), "D", "reopen", "ok")
		}
		if err != nil {
			fmt.Println("error:", err)
			return 3
		}
	}
	fmt.Println("finished")
	return 0
}

// load reads the table the previous child left (repaired and closed by
// the verifier) into the writer's model.
func (w *writer) load(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	t, err := dets.Open(path, dets.Options{Kind: w.kind})
	if err != nil {
		return err
	}
	for obj, err := range t.All() {
		if err != nil {
			_ = t.Close()
			return err
		}
		w.m.Insert(obj)
	}
	return t.Close()
}

func (w *writer) object() etf.Term {
	pad := []int{0, 8, 40, 200}[w.rng.IntN(4)]
	return etf.Tuple{etf.Int(w.rng.IntN(writerKeys)), etf.Int(w.rng.IntN(3)), etf.Binary(bytes.Repeat([]byte{'x'}, pad))}
}

func counterKey(i int) etf.Term { return etf.Tuple{etf.Atom("c"), etf.Int(i)} }

func encArgs(args ...etf.Term) string {
	b, err := etf.Encode(etf.List(args))
	if err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// start logs the call about to be made; a hint on stdout tells the parent
// a save or a growth is coming, so it can aim a kill at it.
func (w *writer) start(op string, args ...etf.Term) (string, error) {
	id := strconv.Itoa(w.n)
	w.n++
	return id, w.log.add(id, "S", op, encArgs(args...))
}

func (w *writer) done(id, op, result string) error { return w.log.add(id, "D", op, result) }

// session runs calls on t until the mix picks a close/reopen.
func (w *writer) session(t *dets.Table) error {
	for w.n < writerMaxOps {
		r := w.rng.IntN(1000)
		switch {
		case r < 380:
			objs := make([]etf.Term, 1+w.rng.IntN(3))
			grows := false
			for i := range objs {
				objs[i] = w.object()
				k, _ := w.m.KeyOf(objs[i])
				grows = grows || len(w.m.Lookup(k)) == 0
			}
			if grows && len(w.m.Keys()) >= 256 {
				fmt.Println("hint grow")
			}
			id, err := w.start("insert", objs...)
			if err == nil {
				err = t.Insert(objs...)
			}
			if err != nil {
				return err
			}
			w.m.Insert(objs...)
			if err := w.done(id, "insert", "ok"); err != nil {
				return err
			}
		case r < 480:
			objs := make([]etf.Term, 1+w.rng.IntN(2))
			for i := range objs {
				objs[i] = w.object()
			}
			id, err := w.start("insert_new", objs...)
			if err != nil {
				return err
			}
			ok, err := t.InsertNew(objs...)
			if err != nil {
				return err
			}
			if want := w.m.InsertNew(objs...); ok != want {
				return fmt.Errorf("insert_new returned %v, the model %v", ok, want)
			}
			if err := w.done(id, "insert_new", strconv.FormatBool(ok)); err != nil {
				return err
			}
		case r < 580:
			key := etf.Int(w.rng.IntN(writerKeys))
			id, err := w.start("delete", key)
			if err == nil {
				err = t.Delete(key)
			}
			if err != nil {
				return err
			}
			w.m.Delete(key)
			if err := w.done(id, "delete", "ok"); err != nil {
				return err
			}
		case r < 680:
			obj := w.object()
			k, _ := w.m.KeyOf(obj)
			if l := w.m.Lookup(k); len(l) > 0 && w.rng.IntN(4) != 0 {
				obj = l[w.rng.IntN(len(l))]
			}
			id, err := w.start("delete_object", obj)
			if err == nil {
				err = t.DeleteObject(obj)
			}
			if err != nil {
				return err
			}
			w.m.DeleteObject(obj)
			if err := w.done(id, "delete_object", "ok"); err != nil {
				return err
			}
		case r < 900:
			if w.kind != dets.Set {
				continue
			}
			key := counterKey(w.rng.IntN(writerCounters))
			if len(w.m.Lookup(key)) == 0 {
				obj := etf.Tuple{key, etf.Int(0)}
				id, err := w.start("insert", obj)
				if err == nil {
					err = t.Insert(obj)
				}
				if err != nil {
					return err
				}
				w.m.Insert(obj)
				if err := w.done(id, "insert", "ok"); err != nil {
					return err
				}
				continue
			}
			incr := int64(w.rng.IntN(25) - 4)
			id, err := w.start("update_counter", key, etf.Int(incr))
			if err != nil {
				return err
			}
			v, err := t.UpdateCounter(key, 0, incr)
			if err != nil {
				return err
			}
			if want, _ := w.m.UpdateCounter(key, 0, incr); !etf.Equal(v, want) {
				return fmt.Errorf("update_counter returned %v, the model %v", v, want)
			}
			if err := w.done(id, "update_counter", strconv.FormatInt(int64(v.(etf.Int)), 10)); err != nil {
				return err
			}
		case r < 903:
			fmt.Println("hint sync")
			id, err := w.start("delete_all_objects")
			if err == nil {
				err = t.DeleteAllObjects()
			}
			if err != nil {
				return err
			}
			w.m.DeleteAllObjects()
			if err := w.done(id, "delete_all_objects", "ok"); err != nil {
				return err
			}
		case r < 970:
			fmt.Println("hint sync")
			id, err := w.start("sync")
			if err == nil {
				err = t.Sync()
			}
			if err != nil {
				return err
			}
			if err := w.done(id, "sync", "ok"); err != nil {
				return err
			}
		default:
			fmt.Println("hint sync")
			_, err := w.start("reopen")
			return err // the caller closes, then logs the "D" record
		}
	}
	return nil
}

// verifyChild opens the table with AutoRepair, as the next user would
// after the kill, checks it, prints every object ("obj HEX"), closes it,
// reopens it with NoRepair and checks it again, then prints "ok". The
// line "repaired" says the open rebuilt the file.
func verifyChild() int {
	path := os.Getenv(childPathEnv)
	repaired := false
	t, err := dets.Open(path, dets.Options{Kind: envKind(), Repair: dets.AutoRepair,
		Progress: func(dets.RepairProgress) { repaired = true }})
	if err != nil {
		fmt.Println("error: open:", err)
		return 2
	}
	if repaired {
		fmt.Println("repaired")
	}
	if err := t.Check(); err != nil {
		fmt.Println("error: check:", err)
		return 2
	}
	n := 0
	for obj, err := range t.All() {
		if err != nil {
			fmt.Println("error: all:", err)
			return 2
		}
		b, err := etf.Encode(obj)
		if err != nil {
			fmt.Println("error: encode:", err)
			return 2
		}
		fmt.Println("obj", hex.EncodeToString(b))
		n++
	}
	if err := t.Close(); err != nil {
		fmt.Println("error: close:", err)
		return 2
	}
	t, err = dets.Open(path, dets.Options{Kind: envKind()})
	if err != nil {
		fmt.Println("error: reopen NoRepair:", err)
		return 2
	}
	info, err := t.Info()
	if err == nil {
		err = t.Check()
	}
	if err == nil && info.Size != n {
		err = fmt.Errorf("size %d after reopening, %d objects before", info.Size, n)
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Println("error: reopen:", err)
		return 2
	}
	fmt.Println("ok")
	return 0
}
