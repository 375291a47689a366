package otptest

import (
	"bytes"
	"strings"
	"testing"
)

func TestEvalRoundTrip(t *testing.T) {
	r := Erl(t)
	out := r.Eval(t, `[<<X/binary, "!">> || X <- In]`, []byte("a"), []byte{}, []byte{0, 255})
	want := [][]byte{[]byte("a!"), []byte("!"), {0, 255, '!'}}
	if len(out) != len(want) {
		t.Fatalf("got %d results, want %d", len(out), len(want))
	}
	for i := range want {
		if !bytes.Equal(out[i], want[i]) {
			t.Errorf("result %d = %q, want %q", i, out[i], want[i])
		}
	}
}

func TestEvalEmpty(t *testing.T) {
	r := Erl(t)
	out := r.Eval(t, `In`)
	if len(out) != 0 {
		t.Fatalf("got %d results, want none", len(out))
	}
}

func TestEvalReportsErlangError(t *testing.T) {
	r := Erl(t)
	_, err := r.EvalErr(`erlang:error(boom_from_test)`)
	if err == nil || !strings.Contains(err.Error(), "boom_from_test") {
		t.Fatalf("error = %v, want erl's own text with boom_from_test", err)
	}
	_, err = r.EvalErr(`ok`)
	if err == nil || !strings.Contains(err.Error(), "list of binaries") {
		t.Fatalf("error = %v, want a complaint about the result shape", err)
	}
	_, err = r.EvalErr(`[1 +`)
	if err == nil || !strings.Contains(err.Error(), "parse error") {
		t.Fatalf("error = %v, want a parse error", err)
	}
}

func TestBinaryListCodec(t *testing.T) {
	in := [][]byte{[]byte("x"), {}, bytes.Repeat([]byte{7}, 300)}
	out, err := decodeBinaryList(encodeBinaryList(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("len %d", len(out))
	}
	for i := range in {
		if !bytes.Equal(in[i], out[i]) {
			t.Fatalf("element %d differs", i)
		}
	}
	for _, bad := range [][]byte{{}, {131}, {131, 108, 0, 0, 0, 9, 106}, {131, 97, 1}} {
		if _, err := decodeBinaryList(bad); err == nil {
			t.Errorf("decodeBinaryList(%v) accepted bad input", bad)
		}
	}
}
