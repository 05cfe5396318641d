package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// Value is a statistic that may be undefined, such as the chi-square
// statistic of McNemar's test when no pair is discordant. The zero Value is
// undefined. An undefined Value prints as "n/a", marshals to JSON null, and
// is left out of a struct field tagged `json:",omitzero"`, so neither 0 nor
// NaN can stand in for "no answer" in a report.
type Value struct {
	v  float64
	ok bool
}

// Defined returns v as a defined Value. NaN and infinities are not numbers
// a report can print, so they give an undefined Value.
func Defined(v float64) Value {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Value{}
	}
	return Value{v: v, ok: true}
}

// Get returns the number and whether it is defined.
func (v Value) Get() (float64, bool) { return v.v, v.ok }

// IsZero reports whether v is undefined. encoding/json calls it for fields
// tagged omitzero, which is how an undefined Value is left out; a defined 0
// is not zero in this sense.
func (v Value) IsZero() bool { return !v.ok }

// String returns the number in the shortest form that reads back exactly,
// or "n/a".
func (v Value) String() string { return fmt.Sprint(v) }

// Format lets fmt verbs apply to the number (%.3f, %g, %v, %s as %v) and
// prints "n/a", padded to the width, when v is undefined.
func (v Value) Format(f fmt.State, verb rune) {
	if !v.ok {
		w, _ := f.Width()
		if f.Flag('-') {
			w = -w // a negative width pads on the right
		}
		fmt.Fprintf(f, "%*s", w, "n/a")
		return
	}
	if verb == 's' {
		verb = 'v'
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), v.v)
}

// MarshalJSON writes the number as encoding/json writes a float64, or null.
func (v Value) MarshalJSON() ([]byte, error) {
	if !v.ok {
		return []byte("null"), nil
	}
	return json.Marshal(v.v)
}

// UnmarshalJSON reads a number or null, so that evidence written by
// MarshalJSON reads back to the same Value.
func (v *Value) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*v = Value{}
		return nil
	}
	var f float64
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("stats value: %w", err)
	}
	*v = Defined(f)
	return nil
}

// Interval is a two-sided confidence interval [Lo, Hi].
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}
