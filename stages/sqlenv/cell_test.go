package sqlenv

import (
	"math"
	"testing"
)

// tenth is a variable so that 0.1 + 0.2 is computed in float64, not folded
// exactly by the compiler.
var tenth = 0.1

func TestFormatReal(t *testing.T) {
	// Expected values are Python 3 repr(float).
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"zero", 0, "0.0"},
		{"negative zero", math.Copysign(0, -1), "-0.0"},
		{"integral", 1, "1.0"},
		{"fraction", 1.5, "1.5"},
		{"shortest digits", 0.1, "0.1"},
		{"sum with error", tenth + 2*tenth, "0.30000000000000004"},
		{"large positional", 1234567.0, "1234567.0"},
		{"last positional exponent", 1e15, "1000000000000000.0"},
		{"first scientific exponent", 1e16, "1e+16"},
		{"scientific with digits", 1.2345678901234568e17, "1.2345678901234568e+17"},
		{"small positional", 0.0001, "0.0001"},
		{"first small scientific", 0.00001, "1e-05"},
		{"small scientific digits", 1.5e-5, "1.5e-05"},
		{"three-digit exponent", 1e300, "1e+300"},
		{"negative", -2.75, "-2.75"},
		{"infinity", math.Inf(1), "inf"},
		{"negative infinity", math.Inf(-1), "-inf"},
		{"nan", math.NaN(), "nan"},
		{"ratio", 2.0 / 3.0, "0.6666666666666666"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatReal(tt.in); got != tt.want {
				t.Errorf("FormatReal(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCellString(t *testing.T) {
	tests := []struct {
		name string
		in   Cell
		want string
	}{
		{"null", Null(), "NULL"},
		{"int", Int(-42), "-42"},
		{"real", Real(7.0), "7.0"},
		{"text", Text("a b"), "a b"},
		{"blob", Blob([]byte{0x00, 0xab}), "X'00AB'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}
