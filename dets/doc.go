// Package dets is a native Go engine for DETS tables: disk-based hash
// tables of Erlang terms with set, bag and duplicate_bag semantics.
//
// It reads and writes Erlang/OTP dets format 9 ("otp9"): a file written here
// opens in real OTP with {repair,false}, and files OTP writes open here. The
// byte-level specification is docs/format-otp9.md; section numbers (§) in the
// code refer to it. Constants live in format.go.
//
// # File layout (all integers unsigned 32-bit big-endian)
//
//	0     +------------------------------------------------------------+
//	      | FreelistsPointer | Cookie 0x00ABCDEF | ClosedProperly 0/1  |
//	12    | Type 1..3 | Version 9 | M | Next | KeyPos | NoObjects      |
//	      | NoKeys | MinSlots | MaxSlots | HashMethod 1 | N            |
//	56    | 28 size-class counters (buckets per 2^4 .. 2^31 block)     |
//	168   | MD5 of bytes 12..167 (all zero: not checked)               |
//	184   | FlBase (buddy base; 0 = 1336)                              |
//	188   | 124 reserved zero bytes                                    |
//	312   | 256 pointers to segment-array parts (0 = none)             |
//	1336  +------------------------------------------------------------+
//	      | buddy area: parts (512 segment pointers, 2048 B),          |
//	      | segments (256 slot entries <<Size, Ptr>>, 2048 B),         |
//	      | buckets <<Size, ACTIVE|FREE, body>> in 2^k-byte blocks,    |
//	      | free blocks                                                |
//	FLP   +------------------------------------------------------------+
//	      | free-list records <<12+4n, FREE, Class, Addr*n>> ...      |
//	      | terminator <<12, FREE, 12345>>                             |
//	EOF-4 | trailer: file size - FlBase                                |
//	      +------------------------------------------------------------+
//
// The free lists and the trailer count only while the file is closed
// properly: the first change after an open or a Sync clears the closed flag
// and fsyncs. (OTP also truncates the file at FreelistsPointer then; godets
// leaves the stale records, which repair skips as FREE, until the next save
// overwrites or trims them.)
//
// # Invariants (checked by Table.Check)
//
//	I1  0 <= N < M, Next = M + N, all multiples of 256, M a power of two,
//	    Min <= M, Next <= Max <= 32Mi.
//	I2  A key with phash2 value H lives in slot H&(M-1), or H&(2M-1) when
//	    that is below N.
//	I3  A slot entry's Size equals its bucket's Size; the bucket is ACTIVE.
//	I4  Keys in a bucket ascend strictly in dets_utils:cmp order
//	    (etf.CompareExact); a key's objects are in insertion order.
//	I5  Header NoObjects, NoKeys and the size-class counters are exact (OTP
//	    refuses buckets larger than the largest counted class).
//	I6  Parts, segments, buckets and free blocks tile the area from 1336.
//
// # Repair
//
// A file that was not closed properly, or that is damaged, is rebuilt beside
// itself from the objects the old file still proves whole, and the result is
// renamed over it (Repair; Open with AutoRepair or ForceRepair). A repair
// runs five stages: scan, size, sort, build, replace. Its memory is bounded
// whatever the file's size: the objects stay in a read-only map of the old
// file, and the heap holds an index of 16 bytes an object up to 2Mi objects,
// beyond which the index is sorted externally in a file beside the table.
// Repair's documentation gives the stages, the rules that decide which
// objects are kept and the memory each stage takes; docs/repair.md has the
// whole algorithm, and how it differs from OTP's.
//
// # Decisions
//
//   - The zero RepairMode is NoRepair: a library must not rewrite a file
//     behind its caller's back.
//   - The zero Kind and KeyPos accept what the file says.
//   - Files hashed with the legacy phash (method 0) are refused with
//     ErrUnsupportedHash.
//   - A bad free list on a properly closed file is a repair case, as in
//     OTP; with NoRepair it is ErrNeedsRepair (wrapping a
//     *CorruptionError).
//   - The buddy base is FlBase when non-zero, else 1336 (OTP always resets
//     it to 1336 on open; both are valid, see buddy.go).
//   - Writes go straight to the file (no write cache), so a killed process
//     loses no acknowledged operation. A long-lived table does its bucket
//     I/O through a shared memory map of the file (mmap.go), which the
//     kernel treats like pwrite: same page cache, same fsync. The map is
//     made after a few dozen operations, so a short open-use-close cycle
//     makes no mmap call. Sync fsyncs the data, then the closed
//     header; Close orders the data before the closed header with one fsync
//     and, like OTP's close, does not fsync the header itself. Close is
//     idempotent. Durability LikeOTP drops the ordering fsync, as OTP does
//     (one fsync less per write session, no guarantee after a power loss).
//   - A live bucket is never rewritten in place, though OTP does so when
//     the bucket keeps its size class: the new bucket goes to a new block,
//     the old one is marked FREE, then the slot is repointed. No kill can
//     leave a half-written bucket whose objects a repair would lose. The
//     holes this leaves are filled at each save (compact.go): blocks at the
//     top of the data move down into them, at most as many as buckets were
//     freed since the previous save, so files end no larger than OTP's
//     for the same inserts (duplicate_bag tables excepted, see there).
//   - Repair (repair.go) rebuilds beside the file and renames over it; it
//     keeps MinNoSlots as it was (OTP raises it) and keeps the whole objects
//     of a damaged bucket that OTP would drop.
//   - The table grows eagerly: after each batch of inserts, one segment at a
//     time while there are more keys than slots.
package dets
