package main

import (
	"encoding/binary"
	"flag"
	"fmt"

	farm "github.com/dgryski/go-farm"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
)

var digestCmd = &command{
	name:    "digest",
	summary: "print an order-independent digest of the objects",
	usage:   "dets digest [--wait D] [--repair MODE] FILE",
	help: `Prints a digest of the table's objects as 32 hex digits. Two tables holding
the same multiset of objects have the same digest, whatever their format,
layout, history or insertion order, so it tells whether a copy, a repair, a
dump and load, or a conversion kept the data. The table kind and key
position are not part of the digest.

How it is computed, so other tools can reproduce it: for each object, F is
the FarmHash Fingerprint64 of the object's canonical external term format
(the bytes of erlang:term_to_binary(T, [{minor_version, 1}]), starting with
131: OTP 25's default; OTP 26 and later need the option, since they write
atoms as UTF-8 by default). With S the sum of
all F modulo 2^64, X the exclusive or of all F, and N the number of objects,
the digest is Fingerprint64(S, X, N as three little-endian 64-bit words)
followed by N, printed as two 16-digit hex numbers. The sum counts repeated
objects of a duplicate_bag; the xor guards against sums that collide.`,
	example: `  dets digest a.dets
  [ "$(dets digest a.dets)" = "$(dets digest b.dets)" ] && echo same content`,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		return func(args []string) error {
			if err := exactArgs("digest", args, 1, 1, "FILE"); err != nil {
				return err
			}
			return c.digest(args[0])
		}
	},
}

// contentDigest accumulates the order-independent digest described in the
// digest command's help.
type contentDigest struct {
	sum, xor, n uint64
}

func (d *contentDigest) add(obj etf.Term) error {
	b, err := etf.Encode(obj)
	if err != nil {
		return err
	}
	f := farm.Fingerprint64(b)
	d.sum += f
	d.xor ^= f
	d.n++
	return nil
}

func (d *contentDigest) String() string {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], d.sum)
	binary.LittleEndian.PutUint64(b[8:], d.xor)
	binary.LittleEndian.PutUint64(b[16:], d.n)
	return fmt.Sprintf("%016x%016x", farm.Fingerprint64(b[:]), d.n)
}

func (c *cmdCtx) digest(path string) error {
	if err := existing(path); err != nil {
		return err
	}
	var d contentDigest
	err := c.session(path, false, dets.Options{}, func(t *dets.Table) error {
		return digestTable(t, &d)
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, d.String())
	return nil
}

func digestTable(t *dets.Table, d *contentDigest) error {
	for obj, err := range t.All() {
		if err != nil {
			return err
		}
		if err := d.add(obj); err != nil {
			return fmt.Errorf("object %d: %w", d.n+1, err)
		}
	}
	return nil
}
