//go:build !windows

package lockfile

import (
	"sync"
	"time"
)

// Parked descriptors.
//
// Opening and closing the sidecar is the dearest part of an uncontended
// lock (with the name check before the open, about a quarter of its cost), so
// Unlock keeps the descriptor, unlocked, for the next session on the same
// data path, and an attempt that finds the lock held keeps its descriptor
// for the next poll. Reusing one is as safe as a fresh open because no
// check after the open trusts the open itself:
//
//   - The descriptor was opened by an earlier attempt after the name checks
//     (regular, one link, not a symlink or mount point; never a FIFO or
//     device) and passed the descriptor checks then. Nothing is opened on
//     reuse, so there is nothing to check before an open.
//   - After flock, the attempt checks that the sidecar path names the
//     descriptor's inode, with one link, as a regular file that is not a
//     mount root, exactly as for a fresh descriptor. A sidecar deleted,
//     replaced, re-pointed through a directory symlink, hard-linked or
//     mounted over since it was parked fails that check; the descriptor is
//     then closed (never parked again) and the attempt retried with a fresh
//     open, which runs every name check again.
//   - The data path re-check under the lock runs as for a fresh descriptor.
//   - A descriptor's filesystem never changes, so the type judged when it was
//     opened still holds; it is judged again (no system call) so that the
//     FSType hook applies.
//
// A parked descriptor holds no lock (LOCK_UN ran first, or flock failed), so
// it excludes nobody, and it is close-on-exec. Each open descriptor belongs
// to exactly one owner, a Lock or this set: two sessions never share an open
// file description (flock on one description by two sessions would let both
// "hold" the lock). At most maxParked are kept, one per data path, and a
// sweep closes those unused for a full parkIdle period, so a process that
// stops using a file keeps its filesystem busy (umount: EBUSY) for at most
// about two periods.
//
// Parking needs the kernel's mount-root attribute (statx, Linux 5.8), which
// the check after flock relies on; without it descriptors are closed.

// maxParked bounds the parked descriptors of the process.
const maxParked = 16

// parkIdle is the sweep period. A variable so that tests can shorten it.
var parkIdle = time.Second

type parkedFD struct {
	fd    int
	id    fileID
	magic uint32 // statfs f_type the kernel gave when it was opened
	used  bool   // parked since the last sweep
	// waitedAt is Lock.waitedAt of the session that parked it.
	waitedAt int64
}

var parked struct {
	sync.Mutex
	m     map[string]parkedFD // by resolved data path
	timer *time.Timer
	armed bool
}

// isParked reports whether a descriptor is parked for the data path.
func isParked(data string) bool {
	parked.Lock()
	_, ok := parked.m[data]
	parked.Unlock()
	return ok
}

// takeParked removes and returns the descriptor parked for data, if any. The
// caller owns it from then on.
func takeParked(data string) (parkedFD, bool) {
	parked.Lock()
	p, ok := parked.m[data]
	if ok {
		delete(parked.m, data)
	}
	parked.Unlock()
	return p, ok
}

// parkFD takes ownership of an unlocked descriptor of data's sidecar: it is
// kept, replacing (and closing) an older one for data, or closed when the
// set is full.
func parkFD(data string, p parkedFD) {
	p.used = true
	drop := noFD
	parked.Lock()
	old, had := parked.m[data]
	switch {
	case had:
		drop = old.fd
	case len(parked.m) >= maxParked:
		drop = p.fd
	}
	if drop != p.fd {
		if parked.m == nil {
			parked.m = make(map[string]parkedFD)
		}
		parked.m[data] = p
		if !parked.armed {
			parked.armed = true
			if parked.timer == nil {
				parked.timer = time.AfterFunc(parkIdle, sweepParked)
			} else {
				parked.timer.Reset(parkIdle)
			}
		}
	}
	parked.Unlock()
	if drop != noFD {
		_ = closeFD(drop) // unlocked and never written: nothing to lose
	}
}

// sweepParked closes the descriptors not used since the previous sweep and
// re-arms itself while any remain.
func sweepParked() {
	var idle []int
	parked.Lock()
	for k, p := range parked.m {
		if p.used {
			p.used = false
			parked.m[k] = p
			continue
		}
		idle = append(idle, p.fd)
		delete(parked.m, k)
	}
	if len(parked.m) > 0 {
		parked.timer.Reset(parkIdle)
	} else {
		parked.armed = false
	}
	parked.Unlock()
	for _, fd := range idle {
		_ = closeFD(fd)
	}
}
