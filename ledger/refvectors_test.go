package ledger

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The vectors under testdata/reference were computed by an independent
// implementation of docs/FORMAT.md, so these tests pin the format to the
// document rather than to this package's own output.

type entryVector struct {
	Name    string   `json:"name"`
	Seq     int64    `json:"seq"`
	Prev    string   `json:"prev"`
	Kind    string   `json:"kind"`
	Run     string   `json:"run"`
	At      string   `json:"at"`
	Blobs   []string `json:"blobs"`
	Body    string   `json:"body"`
	Input   *string  `json:"body_input"`
	Hash    string   `json:"hash"`
	InChain bool     `json:"in_chain"`
}

func readVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/reference/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func hexDigest(t *testing.T, s string) Digest {
	t.Helper()
	d, err := ParseDigest(s)
	if err != nil {
		t.Fatalf("digest %q: %v", s, err)
	}
	return d
}

func TestEntryHashMatchesIndependentImplementation(t *testing.T) {
	var file struct {
		Cases []entryVector `json:"cases"`
	}
	readVectors(t, "entry-hash-vectors.json", &file)
	if len(file.Cases) != 37 {
		t.Fatalf("read %d entry cases, want the 37 the vector file holds", len(file.Cases))
	}
	var chainPrev Digest // prev of the next in-chain case
	chained := 0
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			e := Entry{Seq: c.Seq, Prev: hexDigest(t, c.Prev), Kind: c.Kind, Run: c.Run, At: c.At, Body: json.RawMessage(c.Body)}
			for _, b := range c.Blobs {
				e.Blobs = append(e.Blobs, hexDigest(t, b))
			}
			if got := computeHash(&e).Hex(); got != c.Hash {
				t.Errorf("hash %s, the independent implementation says %s", got, c.Hash)
			}
			// A stored body is canonical: it re-canonicalizes to itself.
			if got, err := Canonicalize([]byte(c.Body)); err != nil || string(got) != c.Body {
				t.Errorf("stored body does not re-canonicalize to itself (err %v):\n%s", err, cmp.Diff(c.Body, string(got)))
			}
			if c.Input != nil {
				if got, err := Canonicalize([]byte(*c.Input)); err != nil || string(got) != c.Body {
					t.Errorf("body input canonicalizes differently (err %v):\n%s", err, cmp.Diff(c.Body, string(got)))
				}
			}
			if c.InChain {
				if e.Prev != chainPrev {
					t.Errorf("in-chain case %d: prev %s, want the hash before it %s", c.Seq, e.Prev.Hex(), chainPrev.Hex())
				}
				chainPrev = hexDigest(t, c.Hash)
				chained++
			}
		})
	}
	if chained != 11 {
		t.Errorf("%d in-chain cases, want 11", chained)
	}
}

// undecidedCanonical lists the vector cases where docs/FORMAT.md was found
// ambiguous and this package's behaviour differs from the reference's
// literal reading (shared/testdata/ledger/SOURCES.md, findings 1, 3 and 4).
// The format decision is still open (issue 14); until it is made, these
// cases are held to today's behaviour, and the test fails when one of them
// starts to agree, so the list only shrinks.
var undecidedCanonical = map[string]string{
	"duplicate-member-refused":                         "kept last; RFC 8785 (I-JSON) refuses",
	"lone-surrogate-refused":                           "replaced with U+FFFD; I-JSON refuses",
	"invalid-utf8-refused":                             "replaced with U+FFFD; I-JSON refuses",
	"integer-exact-2^60":                               "refused: its ES form is not the literal",
	"integer-exact-but-output-not-recanonicalizable":   "refused: its ES form is not the literal",
	"integer-literal-equal-to-its-es-form-but-inexact": "accepted: the literal is the ES form of its double",
}

func TestCanonicalJSONMatchesIndependentImplementation(t *testing.T) {
	var file struct {
		Cases []struct {
			Name      string  `json:"name"`
			Input     *string `json:"input"`
			InputHex  string  `json:"input_hex"`
			OutputHex *string `json:"output_utf8_hex"`
			Error     bool    `json:"error"`
			Ambiguous bool    `json:"ambiguous"`
		} `json:"cases"`
		Numbers []struct {
			Bits   string `json:"ieee754_hex"`
			Output string `json:"output"`
		} `json:"numbers"`
	}
	readVectors(t, "canonical-json-vectors.json", &file)
	if len(file.Cases) != 35 || len(file.Numbers) != 37 {
		t.Fatalf("read %d cases and %d numbers, want 35 and 37", len(file.Cases), len(file.Numbers))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var in []byte
			if c.Input != nil {
				in = []byte(*c.Input)
			} else {
				var err error
				if in, err = hex.DecodeString(c.InputHex); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Canonicalize(in)
			agrees := (err != nil) == c.Error
			if agrees && !c.Error {
				want, _ := hex.DecodeString(*c.OutputHex)
				agrees = string(got) == string(want)
				if !agrees && !c.Ambiguous {
					t.Errorf("output differs from the reference:\n%s", cmp.Diff(string(want), string(got)))
					return
				}
			}
			why, undecided := undecidedCanonical[c.Name]
			switch {
			case undecided && agrees:
				t.Errorf("now agrees with the reference: remove it from undecidedCanonical (%s)", why)
			case !undecided && !agrees:
				t.Errorf("reference error=%v, got output %q, err %v", c.Error, got, err)
			}
		})
	}
	for _, n := range file.Numbers {
		bits, err := strconv.ParseUint(n.Bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(bits)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue // not JSON numbers; the vector file lists none
		}
		if got := formatES6(f); got != n.Output {
			t.Errorf("bits %s: %s, want %s", n.Bits, got, n.Output)
		}
	}
}
