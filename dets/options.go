package dets

import "fmt"

// Kind is the table type.
type Kind uint8

// Table kinds. The zero Kind means "whatever the file says" when opening an
// existing file, and Set when creating one.
const (
	Set          Kind = iota + 1 // one object per key
	Bag                          // distinct objects per key
	DuplicateBag                 // any objects per key, duplicates kept
)

func (k Kind) String() string {
	switch k {
	case 0:
		return "unspecified"
	case Set:
		return "set"
	case Bag:
		return "bag"
	case DuplicateBag:
		return "duplicate_bag"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Format is the on-disk format.
type Format uint8

const (
	// OTP9 is Erlang/OTP dets format 9: real OTP opens these files.
	OTP9 Format = iota
	// Native is godets's own format (docs/format-native.md), being built
	// in steps: tables of a fixed slot count for now (no growth), and no
	// recovery or repair of a file not closed properly yet.
	Native
)

func (f Format) String() string {
	switch f {
	case OTP9:
		return "otp9"
	case Native:
		return "native"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// RepairMode says what Open does with a file that needs repair.
type RepairMode uint8

const (
	// NoRepair is the zero value: a library must not silently rewrite a file.
	// Open returns ErrNeedsRepair for a file that was not closed properly.
	NoRepair RepairMode = iota
	// AutoRepair repairs a file that was not closed properly (OTP
	// {repair,true}).
	AutoRepair
	// ForceRepair repairs (or compacts) the file even if it was closed
	// properly (OTP {repair,force}).
	ForceRepair
)

func (r RepairMode) String() string {
	switch r {
	case NoRepair:
		return "no"
	case AutoRepair:
		return "auto"
	case ForceRepair:
		return "force"
	}
	return fmt.Sprintf("RepairMode(%d)", uint8(r))
}

// Durability says what a save (Close, Sync) guarantees against a power
// loss or an operating-system crash. Against a killed process both modes
// are safe: every acknowledged write is in the file, and a file caught
// mid-save needs repair.
type Durability uint8

const (
	// Ordered is the zero value: a save fsyncs the data before it writes
	// the closed header, so no power loss can leave a "closed properly"
	// header over data that did not reach the disk. A write session (open,
	// change, close) costs two fsyncs: this one and the one that marks the
	// file dirty.
	Ordered Durability = iota
	// LikeOTP saves as OTP's dets does: Close writes the closed header
	// without that fsync, and Sync fsyncs once, after it. One fsync less
	// per write session; after a power loss the file can claim to be
	// closed over data that never reached the disk, which nothing detects
	// (otp9 has no checksums).
	LikeOTP
)

func (d Durability) String() string {
	switch d {
	case Ordered:
		return "ordered"
	case LikeOTP:
		return "like-otp"
	}
	return fmt.Sprintf("Durability(%d)", uint8(d))
}

// Options configure Open.
type Options struct {
	// Kind of the table. Zero accepts the file's kind (Set when creating);
	// otherwise a different kind in the file gives ErrKindMismatch.
	Kind Kind
	// KeyPos is the 1-based key position in each tuple. Zero accepts the
	// file's (1 when creating); otherwise a difference gives
	// ErrKeyPosMismatch.
	KeyPos int
	// Format of a new file. The zero value, OTP9, opens files of either
	// format; Native refuses an otp9 file with ErrFormatMismatch.
	Format Format
	// Repair decides what happens to a file that needs repair.
	Repair RepairMode
	// ReadOnly opens without writing; a missing file is an error then.
	ReadOnly bool
	// Durability of saves; the zero value, Ordered, is the safe one.
	Durability Durability
	// MinSlots and MaxSlots bound the number of hash slots (OTP
	// min_no_slots and max_no_slots). They are rounded up to powers of two
	// (at least 256, at most 32Mi). Zero means the defaults, 256 and 32Mi.
	// Like OTP, they apply only when a file is created or rebuilt.
	MinSlots, MaxSlots int
	// FS does all file I/O; nil means OSFS.
	FS FS
	// Progress, when set, receives reports while Open repairs or compacts
	// the file. It runs on the opening goroutine and must be quick.
	Progress func(RepairProgress)

	// tune, when set, replaces defaultTuning for this table and its
	// repairs (tests only).
	tune *tuning
}

// slotBounds returns the effective min and max slot counts.
func (o *Options) slotBounds() (uint32, uint32, error) {
	if o.MinSlots < 0 || o.MaxSlots < 0 {
		return 0, 0, fmt.Errorf("%w: negative slot count", ErrInvalidOptions)
	}
	lo := int64(defaultMinSlots)
	if o.MinSlots > defaultMinSlots {
		lo = min(pow2ceil(int64(o.MinSlots)), maxSlotsLimit)
	}
	hi := int64(defaultMaxSlots)
	if o.MaxSlots > 0 {
		hi = pow2ceil(min(max(int64(o.MaxSlots), slotsPerSeg), maxSlotsLimit))
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("%w: MinSlots %d above MaxSlots %d", ErrInvalidOptions, o.MinSlots, o.MaxSlots)
	}
	return uint32(lo), uint32(hi), nil
}

func (o *Options) validate() error {
	switch {
	case o.Format > Native:
		return fmt.Errorf("%w: unknown format %d", ErrInvalidOptions, o.Format)
	case o.Kind > DuplicateBag:
		return fmt.Errorf("%w: unknown kind %d", ErrInvalidOptions, o.Kind)
	case o.KeyPos < 0 || o.KeyPos > 1<<24:
		return fmt.Errorf("%w: key position %d", ErrInvalidOptions, o.KeyPos)
	case o.Repair > ForceRepair:
		return fmt.Errorf("%w: unknown repair mode %d", ErrInvalidOptions, o.Repair)
	case o.Durability > LikeOTP:
		return fmt.Errorf("%w: unknown durability %d", ErrInvalidOptions, o.Durability)
	}
	if o.Format == Native {
		_, _, err := o.nativeSlotBounds()
		return err
	}
	_, _, err := o.slotBounds()
	return err
}
