package dets

import (
	"bytes"
	"cmp"
	"errors"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/godets/godets/etf"
)

const (
	scanStep    = 16    // OTP's BUMP
	minObjSize  = 4 + 4 // <<ObjSz:32>> plus the smallest tuple encoding 131,104,1,106
	progressGap = 4 << 20

	splitMarks = 1 << 12 // probes the helper records
)

// repairEntry is the compact per-object index the rebuild sorts: 16 bytes
// per object, whatever the object's size.
type repairEntry struct {
	off  uint64 // file offset of the object's ETF bytes; also the scan sequence
	n    uint32 // length of the ETF bytes
	hash uint32 // phash2 of the key
}

// scanStats counts what the scan saw.
type scanStats struct {
	buckets        int64  // ACTIVE probes whose framing tiled the body
	partial        int64  // ACTIVE probes from which only some objects were kept
	objects        int64  // objects kept
	droppedObjects int64  // framed objects the rules of proof rejected
	named          int64  // ACTIVE probes that scanner.named names
	namedSum       uint64 // entryMix over them, with their Size words
}

// scanner holds the state of one scan over data, the whole file: the scan
// stage of a repair (docs/repair.md §2). It walks the buddy area and finds
// every ACTIVE bucket whose bytes can be trusted, without looking at the
// free lists, and at the segment array only for a file closed properly
// (named).
//
// Every block of the buddy area starts at 1336 + 16*i (the base is 1336 or
// a later address that is 1336 plus a multiple of 2048, and no block is
// smaller than 16 bytes), so the scan probes those addresses only:
//
//	probe p:  <<Size:32, ACTIVE:32, Body:(Size-8)/binary>>
//	          Size >= 8, p+Size <= EOF, Size <= maxSz
//
// Of a probe's objects it keeps those proven whole, by the five rules of
// Repair's doc. Rule 5 is there because damage that begins in an object's
// last bytes and runs on often leaves that object decoding to exactly its
// length ({K, A, K} read as {K, A, 0}: zeros are a valid integer) and breaks
// the framing right after it; OTP then drops the whole bucket, so the
// object, whose value the table never held, must not be kept either. What
// the rules cannot catch: a change inside an object that still decodes to a
// term of the same length, damage that begins in the last object of a
// bucket and runs on past the bucket's end, or that ends inside the zero
// high bytes of the next object's size prefix: the framing is intact (OTP
// keeps such objects too).
//
// After a bucket whose framing tiles its body, the scan jumps to the end of
// its power-of-two block, as OTP does; after any other probe it moves on by
// 16 bytes (or past the proven prefix), so buckets after a damaged one are
// still found.
type scanner struct {
	data   []byte
	kind   Kind
	keyPos int
	maxSz  int64
	emit   func(repairEntry) error
	report func(bytes, objects int64)
	stats  scanStats
	guard  *mapGuard // for the helper goroutine of runSplit

	cands []scanCand // scratch, reused per bucket
	// deepKey is set by proveObject for a sound object whose key is too
	// deep to hash: the repair stops (bucket returns it) rather than
	// drop the object, unless referenced says that no slot entry names
	// its bucket (a bucket image in a freed block or in a live object's
	// bytes, which anyone who stores a binary can plant).
	deepKey    *DeepTermError
	referenced func(bucket int64) bool // nil: the slot table is not trusted
	// named, when not nil, is the slot table of a file that was closed
	// properly: only the buckets it names are examined, as OTP's
	// compaction copies only those (docs/repair.md §9). A bucket image
	// in a freed block would otherwise bring back objects that were
	// never inserted. stats.named and namedSum say which were met.
	named *slotRefs

	// Split scan (runSplit): the smallest file split (tune.parallelScanMin),
	// the entries the helper may hold, and the expected number it finds
	// (to size its buffer). splitCap 0 disables the split.
	splitMin            int64
	splitCap, splitHint int
	out                 []repairEntry // the helper's findings
}

// scanCand is one framed object of the bucket being examined.
type scanCand struct {
	off   int // offset of the ETF bytes in data
	n     int
	group int // key group index (bags); equal to the object index for sets
	ok    bool
	hash  uint32
	kenc  []byte   // the key's encoding inside the object
	key   etf.Term // the key, when decoded (compressed objects, or to compare)
}

// run scans data from the buddy base to the end. On a large file a second
// goroutine scans the second half meanwhile (see runSplit).
func (s *scanner) run() error {
	size := int64(len(s.data))
	p := int64(baseAddr)
	if size >= s.splitMin && s.splitCap > 0 && runtime.GOMAXPROCS(0) > 1 {
		var err error
		if p, err = s.runSplit(); err != nil {
			return err
		}
	}
	if _, err := s.scanRange(p, size, nil); err != nil {
		return err
	}
	if s.report != nil {
		s.report(size, s.stats.objects)
	}
	return nil
}

// scanRange probes from p until the next probe is at or after to (or past
// the end), and returns that next probe. When marks is not nil, each probe
// visited is recorded there with the entries and stats before it, up to
// splitMarks of them; the scan also stops once out holds splitCap entries.
func (s *scanner) scanRange(p, to int64, marks *[]scanMark) (int64, error) {
	size := int64(len(s.data))
	nextReport := (p/progressGap + 1) * progressGap
	for p+bucketHeaderSize <= size && p < to {
		if marks != nil {
			if len(s.out) >= s.splitCap {
				break
			}
			if len(*marks) < splitMarks {
				*marks = append(*marks, scanMark{pos: p, n: len(s.out), stats: s.stats})
			}
		}
		if s.report != nil && p >= nextReport {
			s.report(p, s.stats.objects)
			nextReport = p + progressGap
		}
		sz := int64(be.Uint32(s.data[p:]))
		st := be.Uint32(s.data[p+4:])
		if st != statusActive || sz < bucketHeaderSize+minObjSize || sz > s.maxSz || sz > size-p {
			p += scanStep
			continue
		}
		if s.named != nil {
			if !s.named.names(p) {
				p += scanStep
				continue
			}
			s.stats.named++
			s.stats.namedSum += entryMix(p, sz)
		}
		tiled, proven, err := s.bucket(p, sz)
		if err != nil {
			return p, err
		}
		switch {
		case tiled:
			p += pow2ceil(sz)
		case proven > p+scanStep:
			p = baseAddr + (proven-baseAddr+scanStep-1)/scanStep*scanStep
		default:
			p += scanStep
		}
	}
	return p, nil
}

// scanMark is one probe of the second-half scan: its address, and the
// entries and stats the scan had before it.
type scanMark struct {
	pos   int64
	n     int
	stats scanStats
}

// runSplit scans the first half of the file here while a helper scans from
// the middle, and returns where the sequential scan must go on.
//
// The result must be exactly the sequential scan's. The helper starts at a
// probe address that the sequential scan may never visit (inside a bucket,
// say), so its findings count only from the first probe that both visit:
// the probe at which this goroutine crosses the middle. The probe sequence
// from an address is determined by the bytes alone, so from that probe on
// the helper's findings are the sequential scan's. When the helper never
// visited that probe (or recorded too few probes to tell), its work is
// dropped and the sequential scan simply continues.
func (s *scanner) runSplit() (int64, error) {
	size := int64(len(s.data))
	mid := baseAddr + (size-baseAddr)/2/scanStep*scanStep
	h := &scanner{data: s.data, kind: s.kind, keyPos: s.keyPos, maxSz: s.maxSz, splitCap: s.splitCap, referenced: s.referenced, named: s.named}
	h.out = make([]repairEntry, 0, min(s.splitHint, s.splitCap+1024))
	h.emit = func(e repairEntry) error {
		h.out = append(h.out, e)
		return nil
	}
	var marks []scanMark
	var hEnd int64
	var hErr error // a fault on reading the map: h.emit cannot fail
	done := make(chan struct{})
	go func() {
		defer close(done)
		hErr = s.guard.run(func() (err error) {
			hEnd, err = h.scanRange(mid, size, &marks)
			return err
		})
	}()
	// Guarded here too, so that a fault still waits for the helper,
	// which must not outlive the map.
	var p int64
	err := s.guard.run(func() (err error) {
		p, err = s.scanRange(baseAddr, mid, nil)
		return err
	})
	<-done
	if err != nil || p < mid {
		return p, err
	}
	// The helper's error, like its findings, is the sequential scan's
	// only from the common probe on: one it met inside a bucket that the
	// sequential scan jumps over (a bucket image in a live object's
	// bytes, with a key too deep to hash) must not fail a sound file.
	// Dropped, a real error is met again by the sequential scan.
	i, _ := slices.BinarySearchFunc(marks, p, func(m scanMark, p int64) int { return cmp.Compare(m.pos, p) })
	if i == len(marks) || marks[i].pos != p {
		return p, nil
	}
	m := marks[i]
	for _, e := range h.out[m.n:] {
		if err := s.emit(e); err != nil {
			return p, err
		}
	}
	s.stats.buckets += h.stats.buckets - m.stats.buckets
	s.stats.partial += h.stats.partial - m.stats.partial
	s.stats.objects += h.stats.objects - m.stats.objects
	s.stats.droppedObjects += h.stats.droppedObjects - m.stats.droppedObjects
	s.stats.named += h.stats.named - m.stats.named
	s.stats.namedSum += h.stats.namedSum - m.stats.namedSum
	return hEnd, hErr // hErr arose at hEnd >= p: the sequential scan's too
}

// bucket examines the probe at p with Size sz, emits the objects proven
// whole, and reports whether the framing tiled the body and the end of the
// proven prefix.
func (s *scanner) bucket(p, sz int64) (tiled bool, provenEnd int64, err error) {
	body := s.data[p+bucketHeaderSize : p+sz]
	base := int(p + bucketHeaderSize)
	s.cands = s.cands[:0]
	if s.kind == Set {
		tiled = s.frame(body, base, -1)
	} else {
		tiled = true
		g := 0
		for off := 0; off < len(body); g++ {
			if len(body)-off < 4 {
				tiled = false
				break
			}
			ksz := int(be.Uint32(body[off:]))
			if ksz < 4+minObjSize || ksz > len(body)-off {
				tiled = false
				break
			}
			if !s.frame(body[off+4:off+ksz], base+off+4, g) {
				tiled = false
				break
			}
			off += ksz
		}
	}
	if s.deepKey != nil {
		if s.referenced == nil || s.referenced(p) {
			return tiled, 0, s.deepKey
		}
		s.deepKey = nil // its candidate failed rule 1 and is dropped
	}
	if len(s.cands) == 0 {
		return tiled, 0, nil
	}
	// Rule 2: without tiling, only the prefix before the first object that
	// fails rule 1 has confirmed starts, and the last object of that
	// prefix has no confirmed end (rule 5).
	limit := len(s.cands)
	if !tiled {
		for i, c := range s.cands {
			if !c.ok {
				limit = i
				break
			}
		}
		limit = max(limit-1, 0)
		if limit > 0 {
			last := s.cands[limit-1]
			provenEnd = int64(last.off + last.n)
		}
	}
	cs := s.cands[:limit]
	if s.kind != Set {
		s.groupRule(cs)
	}
	s.hashRule(cs)
	kept := 0
	for _, c := range cs {
		if !c.ok {
			continue
		}
		kept++
		if err := s.emit(repairEntry{off: uint64(c.off), n: uint32(c.n), hash: c.hash}); err != nil {
			return false, 0, err
		}
	}
	s.stats.objects += int64(kept)
	s.stats.droppedObjects += int64(len(s.cands) - kept)
	if tiled && kept == len(s.cands) {
		s.stats.buckets++
	} else if kept > 0 {
		s.stats.partial++
	}
	return tiled, provenEnd, nil
}

// frame splits b into <<ObjSz:32, ETF>> records, validating each (rule 1),
// and reports whether the records cover b exactly. base is b's offset in the
// file; g is the key group (-1 for a set, where each object is its own).
func (s *scanner) frame(b []byte, base, g int) bool {
	off := 0
	for off < len(b) {
		if len(b)-off < 4 {
			return false
		}
		osz := int(be.Uint32(b[off:]))
		if osz < minObjSize || osz > len(b)-off {
			return false
		}
		c := scanCand{off: base + off + 4, n: osz - 4, group: g}
		if g < 0 {
			c.group = len(s.cands)
		}
		c.ok, c.kenc, c.key, c.hash = s.proveObject(b[off+4:off+osz], c.off)
		s.cands = append(s.cands, c)
		off += osz
	}
	return true
}

// proveObject applies rule 1 to one object's bytes: it must decode, as a
// whole, to a tuple with at least keyPos elements. It returns the key's
// encoding (or, for a compressed object, the decoded key) and its phash2,
// decoding nothing for the common key types. A sound object nested too
// deep to decode passes (OTP wrote it); one whose key is that deep sets
// s.deepKey, since its slot cannot be computed. off is enc's offset.
func (s *scanner) proveObject(enc []byte, off int) (ok bool, kenc []byte, key etf.Term, hash uint32) {
	if validateStored(enc) != nil {
		return false, nil, nil, 0
	}
	deep := func(err error) {
		if errors.Is(err, etf.ErrTooDeep) && s.deepKey == nil {
			s.deepKey = &DeepTermError{Offset: int64(off), Key: true, Err: err}
		}
	}
	if kenc = keySpan(enc, s.keyPos); kenc != nil {
		if h, ok := encodings.Phash2Body(kenc); ok {
			return true, kenc, nil, h
		}
		k, err := encodings.DecodeBody(kenc)
		if err != nil {
			deep(err)
			return false, nil, nil, 0
		}
		return true, kenc, k, hashTerm(k)
	}
	t, err := decodeTerm(enc)
	if err != nil {
		deep(err)
		return false, nil, nil, 0
	}
	k, ok := keyOf(t, s.keyPos)
	if !ok {
		return false, nil, nil, 0
	}
	return true, nil, k, hashTerm(k)
}

// sameKey reports whether two proven candidates have equal (=:=) keys.
func sameKey(a, b *scanCand) bool {
	if a.kenc != nil && b.kenc != nil {
		if bytes.Equal(a.kenc, b.kenc) {
			return true
		}
		if c, ok := encodings.CompareBodies(a.kenc, b.kenc); ok {
			return c == 0
		}
	}
	return etf.Equal(a.keyTerm(), b.keyTerm())
}

// keyTerm returns c's key, decoding it on first use.
func (c *scanCand) keyTerm() etf.Term {
	if c.key == nil && c.kenc != nil {
		c.key, _ = encodings.DecodeBody(c.kenc)
	}
	return c.key
}

// groupRule applies rule 3: within each key group, objects whose key is not
// the strict-majority key lose their ok mark (all of them when no key has
// a strict majority). It takes linear time in the group: a group of one
// key with many objects is a bag's commonest shape, and comparing every
// pair made the repair of 40,000 objects under one key take 15 s.
func (s *scanner) groupRule(cs []scanCand) {
	for i := 0; i < len(cs); {
		j := i
		for j < len(cs) && cs[j].group == cs[i].group {
			j++
		}
		g := cs[i:j]
		i = j
		// The candidate for the majority (Boyer-Moore vote), then its
		// count; usually every key is the first one's and the vote
		// changes nothing.
		maj, votes, total := -1, 0, 0
		for a := range g {
			if !g[a].ok {
				continue
			}
			total++
			switch {
			case votes == 0:
				maj, votes = a, 1
			case sameKey(&g[a], &g[maj]):
				votes++
			default:
				votes--
			}
		}
		if maj < 0 {
			continue
		}
		best := 0
		for a := range g {
			if g[a].ok && (a == maj || sameKey(&g[a], &g[maj])) {
				best++
			}
		}
		if best == total {
			continue
		}
		for a := range g {
			if g[a].ok && (2*best <= total || !sameKey(&g[a], &g[maj])) {
				g[a].ok = false
			}
		}
	}
}

// hashRule applies rule 4 over the whole bucket.
func (s *scanner) hashRule(cs []scanCand) {
	// Usual case: every proven object agrees.
	first, agree := -1, true
	for _, c := range cs {
		if !c.ok {
			continue
		}
		if first < 0 {
			first = int(c.hash & 255)
		} else if int(c.hash&255) != first {
			agree = false
			break
		}
	}
	if agree {
		return
	}
	var count [256]int
	total := 0
	for _, c := range cs {
		if c.ok {
			count[c.hash&255]++
			total++
		}
	}
	if total == 0 {
		return
	}
	maj, best := 0, 0
	for v, n := range count {
		if n > best {
			maj, best = v, n
		}
	}
	if best == total {
		return
	}
	for i := range cs {
		if cs[i].ok && (2*best <= total || int(cs[i].hash&255) != maj) {
			cs[i].ok = false
		}
	}
}

// hll estimates the number of distinct key hashes seen by the scan (a
// HyperLogLog sketch with 2^12 registers, about 1.6% error), so that the
// rebuilt table can be sized before the index is sorted.
type hll struct {
	reg [1 << hllBits]uint8
}

const hllBits = 12

func (h *hll) add(v uint32) {
	// splitmix64 finalizer: phash2 values are 27 bits and not uniform
	// enough in their high bits for the sketch.
	x := uint64(v) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	i := x >> (64 - hllBits)
	r := uint8(bits.LeadingZeros64(x<<hllBits|1<<(hllBits-1)) + 1)
	if r > h.reg[i] {
		h.reg[i] = r
	}
}

func (h *hll) estimate() int64 {
	m := float64(len(h.reg))
	sum, zeros := 0.0, 0
	for _, r := range h.reg {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return int64(e + 0.5)
}

// readWhole reads size bytes of f into memory.
func readWhole(f File, size int64) ([]byte, func() error, error) {
	b := make([]byte, size)
	if err := readFull(f, b, 0); err != nil {
		return nil, nil, err
	}
	return b, nil, nil
}

// closedBuckets returns the number of buckets the header of data (a
// header the repair trusts) counts, when the file was closed properly: its
// closed flag and trailer say so and its linear-hash fields hold. Only
// then is its slot table meant to name exactly its live buckets; the
// counters are under the MD5, so the scan can check the table against
// them.
func closedBuckets(data []byte) (int64, bool) {
	size := int64(len(data))
	if size < headerEnd+trailerSize {
		return 0, false
	}
	h := decodeHeader(data[:headerSize])
	if h.closed != closedProperly || int64(be.Uint32(data[size-trailerSize:]))+int64(h.flBase) != size ||
		h.validate(size) != "" {
		return 0, false
	}
	var n int64
	for _, c := range h.counters {
		n += int64(c)
	}
	return n, true
}

// slotRefs is the slot table of the file being repaired: a bitmap of the
// bucket addresses its entries name on the scan's 16-byte grid (at most
// 16 MiB for a 2 GiB file), built once, at the first call of names or
// tally, from any goroutine. entries counts the entries that are not
// empty and sum adds up entryMix over them, so that a scan that trusts
// the table can tell afterwards whether it met every bucket the table
// names, each of the size its entry says (repairPlan.scan).
type slotRefs struct {
	data    []byte
	once    sync.Once
	refs    []uint64
	entries int64
	sum     uint64
}

func (r *slotRefs) build() {
	r.once.Do(func() {
		r.refs = make([]uint64, (len(r.data)/scanStep+64)/64)
		im, err := NewImage(r.data)
		if err != nil {
			return
		}
		// Segment by segment, entry by entry inline: a 2 GiB table has
		// up to 2^25 slots, and a call per entry made it half as slow again.
		im.eachSegment(func(s Pointer) bool {
			if s.Bad != "" {
				return true
			}
			seg := r.data[s.Addr : s.Addr+segmentSize]
			for at := 0; at < len(seg); at += slotEntrySize {
				size, ptr := int64(be.Uint32(seg[at:])), int64(be.Uint32(seg[at+4:]))
				if size == 0 && ptr == 0 {
					continue
				}
				r.entries++
				r.sum += entryMix(ptr, size)
				if size > 0 && ptr%scanStep == baseAddr%scanStep && ptr < int64(len(r.data)) {
					i := ptr / scanStep
					r.refs[i/64] |= 1 << (i % 64)
				}
			}
			return true
		})
	})
}

// names reports whether a slot entry names a bucket at address bucket.
func (r *slotRefs) names(bucket int64) bool {
	r.build()
	i := bucket / scanStep
	return bucket%scanStep == baseAddr%scanStep && i/64 < int64(len(r.refs)) && r.refs[i/64]&(1<<(i%64)) != 0
}

// tally returns the number of entries that are not empty and the sum of
// entryMix over them.
func (r *slotRefs) tally() (int64, uint64) {
	r.build()
	return r.entries, r.sum
}

// entryMix hashes a slot entry (or a bucket met at ptr with Size size)
// into one term of an order-free sum: a bucket met at a wrong size, or
// met in place of another, changes the sum.
func entryMix(ptr, size int64) uint64 {
	x := uint64(ptr)<<32 | uint64(size)&0xffffffff
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
