package usage

import (
	"errors"
	"math"
	"testing"
)

func TestChecks(t *testing.T) {
	tests := []struct {
		err  error
		want string // "": no error
	}{
		{Count("n", 3, 1, math.MaxInt), ""},
		{Count("n", 0, 1, math.MaxInt), "--n 0: want 1 or more"},
		{Count("k", 5, 0, 4), "--k 5: want 0 to 4"},
		{Alpha(0.05), ""},
		{Alpha(1), "--alpha 1: want a significance level between 0 and 1, such as 0.05 for 95% intervals"},
		{Alpha(math.NaN()), "--alpha NaN: want a significance level between 0 and 1, such as 0.05 for 95% intervals"},
		{First(nil, Count("b", -1, 0, math.MaxInt), Alpha(2)), "--b -1: want 0 or more"},
		{First(nil, nil), ""},
	}
	for _, tt := range tests {
		var ue Error
		switch {
		case tt.want == "" && tt.err != nil:
			t.Errorf("%v, want no error", tt.err)
		case tt.want != "" && (!errors.As(tt.err, &ue) || ue.Msg != tt.want):
			t.Errorf("%#v, want usage.Error %q", tt.err, tt.want)
		}
	}
}
