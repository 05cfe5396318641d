package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

func TestValueFormat(t *testing.T) {
	for _, tc := range []struct {
		format string
		v      Value
		want   string
	}{
		{"%.3f", Defined(0.03857421875), "0.039"},
		{"%v", Defined(0.25), "0.25"},
		{"%s", Defined(0.25), "0.25"},
		{"%.2e", Defined(1.5e-8), "1.50e-08"},
		{"%.3f", Value{}, "n/a"},
		{"%v", Value{}, "n/a"},
		{"%6.2f", Value{}, "   n/a"},
		{"%-6v|", Value{}, "n/a   |"},
		{"%v", Defined(math.NaN()), "n/a"},
		{"%v", Defined(math.Inf(1)), "n/a"},
		{"%v", Defined(0), "0"},
	} {
		if got := fmt.Sprintf(tc.format, tc.v); got != tc.want {
			t.Errorf("Sprintf(%q, %#v) = %q, want %q", tc.format, tc.v, got, tc.want)
		}
	}
	if s := (Value{}).String(); s != "n/a" {
		t.Errorf("String() of undefined = %q", s)
	}
}

func TestValueJSON(t *testing.T) {
	r, err := McNemar(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":0,"c":0,"exact_p":1,"mid_p":1}`; string(data) != want {
		t.Errorf("undefined statistics are not left out:\n got %s\nwant %s", data, want)
	}
	r, _ = McNemar(10, 2)
	data, _ = json.Marshal(r)
	var back McNemarResult
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back != r {
		t.Errorf("round trip: %+v, want %+v", back, r)
	}
	if data, _ := json.Marshal([]Value{Defined(0), {}}); string(data) != "[0,null]" {
		t.Errorf("bare values marshal as %s, want [0,null]", data)
	}
	var v Value
	if err := json.Unmarshal([]byte(`"x"`), &v); err == nil {
		t.Error("a string unmarshalled into a Value")
	}
}
