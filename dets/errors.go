package dets

import (
	"errors"
	"fmt"

	"github.com/godets/godets/etf"
)

// Errors returned by Open. Open decides from the file's header and the
// options whether a file opens, is repaired first or is refused; each
// refusal has one of these errors (test with errors.Is), and a file refused
// with any of them is left byte-for-byte unchanged.
var (
	// ErrNotDETS: the file is not a DETS file (short, wrong cookie, wrong MD5,
	// a closed flag other than 0 or 1, or a version above 9). OTP:
	// not_a_dets_file.
	ErrNotDETS = errors.New("dets: not a dets file")
	// ErrUnsupportedVersion: a DETS file of format 8 or older. OTP:
	// format_8_no_longer_supported.
	ErrUnsupportedVersion = errors.New("dets: format 8 files are no longer supported")
	// ErrBadTypeCode: the header's table type is not set, bag or
	// duplicate_bag. OTP: invalid_type_code.
	ErrBadTypeCode = errors.New("dets: invalid table type code")
	// ErrBadHashMethod: the header names an unknown hash function. OTP:
	// bad_hash_bif.
	ErrBadHashMethod = errors.New("dets: unknown hash method")
	// ErrUnsupportedHash: the file hashes keys with the legacy phash (method
	// 0, OTP R8). OTP still opens such files; this package refuses them. A
	// ForceRepair open rewrites the file with phash2.
	ErrUnsupportedHash = errors.New("dets: legacy phash (hash method 0) files are not supported")
	// ErrNeedsRepair: the file was not closed properly (or its free lists are
	// damaged) and Options.Repair is NoRepair. OTP: needs_repair.
	ErrNeedsRepair = errors.New("dets: file was not closed properly; needs repair")
	// ErrNotClosed: a read-only open of a file that needs repair, with a
	// repair mode other than NoRepair. OTP: not_closed.
	ErrNotClosed = errors.New("dets: file was not closed properly and cannot be repaired read-only")
	// ErrKindMismatch: Options.Kind differs from the file's type. OTP:
	// type_mismatch.
	ErrKindMismatch = errors.New("dets: table kind mismatch")
	// ErrKeyPosMismatch: Options.KeyPos differs from the file's key
	// position. OTP: keypos_mismatch.
	ErrKeyPosMismatch = errors.New("dets: key position mismatch")
	// ErrInvalidOptions: the options contradict each other (min slots above
	// max slots, a negative key position, an unknown kind). OTP: badarg.
	ErrInvalidOptions = errors.New("dets: invalid options")
	// ErrNotSupported: the request needs a feature this package lacks (the
	// native format of old OTP releases, for example).
	ErrNotSupported = errors.New("dets: not supported")
	// ErrFormatMismatch: Options.Format asks for the native format and the
	// file is an otp9 one (the zero Format opens either).
	ErrFormatMismatch = errors.New("dets: file format mismatch")
	// ErrAlreadyOpen: the file (by any path to it) is already open in this
	// process and the new open could write to it, or the open one can; a
	// repair of a file open in this process is refused with it too. Two
	// handles writing one file would each trust a free list and a slot
	// table that the other changes. Two read-only handles may coexist.
	ErrAlreadyOpen = errors.New("dets: file is already open in this process")
)

// Errors returned by operations on an open table.
var (
	// ErrCorrupt marks every error caused by bytes that fail validation.
	// Details are in *CorruptionError.
	ErrCorrupt = errors.New("dets: corrupt file")
	// ErrFileTooLarge: an allocation would end beyond the otp9 limit of
	// 2^31 - 50,000,000 bytes. OTP: no_more_space_on_file.
	ErrFileTooLarge = errors.New("dets: no more space on file (otp9 files are limited to about 2 GB)")
	// ErrReadOnly: a write on a table opened with ReadOnly, or a forced
	// repair requested read-only. OTP: access_mode.
	ErrReadOnly = errors.New("dets: table is read-only")
	// ErrClosed: an operation on a closed table.
	ErrClosed = errors.New("dets: table is closed")
	// ErrBadObject: an object that is not a tuple with at least KeyPos
	// elements, or that cannot be encoded. OTP: badarg.
	ErrBadObject = errors.New("dets: bad object")
	// ErrBadArgument: another invalid argument (update_counter on a missing
	// key or a non-integer element, a bad position). OTP: badarg.
	ErrBadArgument = errors.New("dets: bad argument")
	// ErrNoSuchKey: UpdateCounter on a key with no object. It also matches
	// ErrBadArgument, as OTP raises badarg.
	ErrNoSuchKey error = noSuchKeyError{}
)

// CorruptionError says where validation of file bytes failed. It matches
// ErrCorrupt with errors.Is.
type CorruptionError struct {
	Path    string
	Offset  int64
	Section string // "header", "segment", "bucket", "freelist", "object", "layout"
	Reason  string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("dets: corrupt %s at offset %d in %s: %s", e.Section, e.Offset, e.Path, e.Reason)
}

// Is reports that every CorruptionError is an ErrCorrupt.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

func corrupt(path, section string, off int64, format string, args ...any) *CorruptionError {
	return &CorruptionError{Path: path, Offset: off, Section: section, Reason: fmt.Sprintf(format, args...)}
}

// openError wraps a sentinel with the file path, keeping errors.Is working.
func openError(sentinel error, path string) error {
	return fmt.Errorf("%w: %s", sentinel, path)
}

// noSuchKeyError is ErrNoSuchKey; it matches ErrBadArgument too.
type noSuchKeyError struct{}

func (noSuchKeyError) Error() string        { return "dets: no object with that key" }
func (noSuchKeyError) Is(target error) bool { return target == ErrBadArgument }

// DeepTermError says that a stored object is sound but nested deeper than
// etf.MaxDepth: OTP wrote it and reads it, and this library keeps it
// (check, repair and conversion copy its bytes) but does not decode it.
// The raw reads (LookupRaw, RawAll) return it. With Key set, its key is
// that deep (or the object is compressed, so that the key is read by
// decoding it), so that an otp9 slot cannot be computed for it: a repair
// or conversion that meets it stops before changing anything. It matches
// etf.ErrTooDeep, never ErrCorrupt.
type DeepTermError struct {
	Path   string
	Offset int64
	Key    bool
	Err    error // the etf error, matching etf.ErrTooDeep
}

func (e *DeepTermError) Error() string {
	if e.Key {
		return fmt.Sprintf("dets: the key of the object at offset %d in %s cannot be read or hashed here: "+
			"it (or the compressed object) is nested deeper than %d levels (OTP reads it)", e.Offset, e.Path, etf.MaxDepth)
	}
	return fmt.Sprintf("dets: the object at offset %d in %s is nested deeper than %d levels, "+
		"which this library reads only as raw bytes (OTP reads it)", e.Offset, e.Path, etf.MaxDepth)
}

func (e *DeepTermError) Unwrap() error { return e.Err }

// objectError is the error for the object of slot at off that be
// describes: a *DeepTermError for a sound object too deep to decode,
// damage otherwise.
func objectError(path string, off int64, slot any, be *bucketError) error {
	if errors.Is(be.cause, etf.ErrTooDeep) {
		return &DeepTermError{Path: path, Offset: off, Err: be.cause}
	}
	return corrupt(path, "object", off, "slot %v: %s", slot, be.reason)
}

// decodeFailure is the error for an object at off whose decoding failed
// with err: a *DeepTermError for a sound object too deep to decode, else
// damage, described by format and args.
func decodeFailure(path string, off int64, err error, format string, args ...any) error {
	if errors.Is(err, etf.ErrTooDeep) {
		return &DeepTermError{Path: path, Offset: off, Err: err}
	}
	return corrupt(path, "object", off, format, args...)
}
