package dets

// CheckStructure is Check without the checks whose outcome the objects'
// contents decide: that each key hashes to the slot it is in, that the
// keys of a bucket are in order, and that a bag holds no object twice.
// Everything else is checked as Check does: the framing of buckets and
// objects, that objects decode, the counts and counters, the tiling of
// the file and, on a clean file, the header and free lists on disk.
//
// It is the verdict that a redacted copy (Image.Redact) shares with its
// original: redaction replaces the keys, so their hashes and order change,
// but not the structure, nor the damage in it.
func (t *Table) CheckStructure() error {
	if err := t.begin(false); err != nil {
		return err
	}
	defer t.mu.Unlock()
	c := checker{t: t, structural: true}
	c.run()
	c.report.Problems, c.report.path = c.problems, t.path
	return c.report.Err()
}
