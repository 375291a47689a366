// Command dets inspects, checks, repairs, compacts, dumps, queries, loads
// and digests Erlang/OTP DETS tables, and lets other programs hold a table's
// lock.
//
// Every subcommand works inside an exclusive session (package exclusive):
// it takes the table's lock on the <file>.slate.lock sidecar, opens the
// table, does its work, closes the table and releases the lock. repair,
// compact, inspect and lock hold the same lock (exclusive.Locked) but do
// not open the table: the backup copy, dets.Repair, the raw read of
// inspect and lock's CMD work on the file directly. A service that
// uses exclusive sessions on the same file therefore waits for the tool,
// or fails cleanly, instead of seeing a half-written file.
//
// Usage:
//
//	dets info    [--json] FILE
//	dets check   [--redacted] FILE
//	dets get     [--format erlang|json] FILE KEY
//	dets keys    [--count] [--format erlang|json] FILE
//	dets stats   [--json] FILE
//	dets repair  [--backup PATH] [--kind set|bag|duplicate_bag --keypos N] FILE
//	dets compact [--dry-run] FILE
//	dets inspect [--slot N | --offset N] [--redact [--out COPY]] FILE
//	dets lock    FILE -- CMD [ARGS...]
//	dets completion bash|zsh
//	dets dump    [--format erlang|json] FILE
//	dets select  [--delete] [--count] [--format erlang|json] FILE MATCHSPEC
//	dets match   [--object] [--count] [--format erlang|json] FILE PATTERN
//	dets load    [--kind set|bag|duplicate_bag] [--keypos N] [--format otp9|native] [--syntax auto|erlang|json] FILE [INPUT]
//	dets digest  FILE
//	dets version [--json]   (or dets --version)
//	dets demo
//	dets help [COMMAND]
//
// Common flags: --wait DURATION (default 0: try the lock once; a number
// needs its unit, 5s) and --repair no|auto|force (default no; repair
// defaults to force; check takes only --wait). Flags may come before or
// after the file name.
//
// Exit codes: 0 ok; 1 usage or other error; 2 needs repair (not closed
// properly); 3 corrupt (check found damage); 4 not a DETS file, or an
// unsupported version; 5 lock busy or wait timed out. A failing command
// prints exactly one line on stderr: "dets COMMAND: message", or with JSON
// output (info --json, dump --format json, version --json) one JSON object,
// {"error": {"command", "code", "exit_code", "message"}}.
//
// The libraries' log records (a failed session cleanup, for one) are
// dropped, since the error line already says what failed; DETS_LOG=debug,
// info, warn or error shows them on stderr from that level up.
//
// version prints the module version and the source revision from the
// binary's build information (runtime/debug.ReadBuildInfo).
//
// # Repair
//
// repair rebuilds the file from every object its scan can read (by
// default always, with --repair auto only when the file was not closed
// properly), writing the new file beside the old one and renaming it over
// it. It prints the objects and keys of the new file, then how many whole
// objects the scan found, how many damaged objects it dropped and from how
// many buckets it kept only some objects. On a terminal a progress bar on
// stderr follows the scan (bytes) and the rebuild (objects); otherwise
// nothing goes to stderr unless the repair fails.
//
// The kind and key position come from the header. A file whose header is
// destroyed is refused with exit 4 and left byte-identical, unless --kind
// and --keypos say what the table was; then the scan rebuilds it. A file
// in which the scan finds no object is still refused with exit 4. With a
// sound header, --kind and --keypos must match it (exit 1 otherwise).
//
// --backup PATH copies the data file byte for byte to PATH, which must not
// exist, after the lock is taken and before anything is written. When FILE
// is a symbolic link the copy is of the file the link resolves to, which
// is also the file that the repair replaces; the link itself is kept.
//
// # Part two: get, keys, stats, compact, inspect, lock, completion
//
// get prints the objects of one key (given in Erlang syntax) and exits 1
// with "not found" when there are none; keys prints each key once. stats
// walks the slot table, the buckets and the free lists once
// ((*dets.Table).Stats): counts, the load factor against OTP's growth rule
// (slots >= keys), histograms of objects per bucket and of buddy size
// classes, free space and fragmentation, the largest object and the byte
// share of keys and values. compact is the ForceRepair rebuild of a file
// that passes check (a damaged one is refused, since the rebuild would
// drop objects); --dry-run estimates the size after it. inspect reads the
// file's bytes (dets.Image) and annotates them; --redact replaces every
// key and value byte by a same-length placeholder and zeroes the bytes no
// structure claims, and 'check --redacted' ((*dets.Table).CheckStructure)
// gives a redacted copy its original's verdict. lock runs CMD under the
// table's lock and exits with its status. completion prints bash or zsh
// completion generated from the command table.
//
// # Dump formats
//
// dump --format erlang writes each object as Erlang text followed by a dot,
// one per line, so that file:consult/1 returns exactly the table's objects.
// Objects that have no text form (pids, references, ports, local funs) make
// the dump fail; use --format json for them.
//
// dump --format json writes JSON Lines, one object per line, with this
// lossless mapping of terms to JSON, which load reads back (it takes JSON
// when the first non-blank line of its input is a JSON object, or with
// --syntax json):
//
//	integer              a JSON number without fraction or exponent, exact at any size
//	float                {"float": 1.5}; the shortest decimal that reads back as the same double
//	true, false          JSON true, false
//	any other atom       {"atom": "name"}
//	binary               {"binary": "text"} if valid UTF-8, else {"base64": "AAEC"}
//	bit string           {"bitstring": "base64 of the bytes", "bits": total bit count}
//	tuple                {"tuple": [elements...]}
//	[] and proper lists  a JSON array of the elements
//	printable string     {"string": "text"} (a non-empty list of printable code points)
//	improper list        {"improper": [elements...], "tail": tail}
//	map                  {"map": [[key, value], ...]}, sorted by key in Erlang term order
//	pid, port, ref, fun  {"etf": "base64 of term_to_binary(Term)"}
//
// # Digest
//
// digest prints Fingerprint64(S, X, N) and N as 32 hex digits, where for
// every object F is the FarmHash Fingerprint64 of its canonical external
// term format, S the sum of all F modulo 2^64, X their exclusive or, N the
// object count, and S, X, N are fed to Fingerprint64 as 24 little-endian
// bytes. Equal multisets of objects give equal digests, whatever the
// table's format, layout, history or insertion order.
package main
