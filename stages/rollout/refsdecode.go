package rollout

import (
	"bytes"
	"encoding/json"

	"github.com/rlgate/rlgate/ledger"
)

// decodeTrajectories reads a trajectories body. Every decision lists the
// episodes of the evaluations it reads (the gate and each re-derivation:
// tens of thousands of references), and encoding/json cost more there
// than reading the entries themselves, so bodies as the ledger writes
// them are read by a scanner made for that layout; any other layout falls
// back to encoding/json, and a fuzz target checks that both agree.
func decodeTrajectories(body []byte) (Trajectories, error) {
	if t, ok := scanTrajectories(body); ok {
		return t, nil
	}
	var t Trajectories
	err := json.Unmarshal(body, &t)
	return t, err
}

// scanTrajectories reads body in the ledger's canonical layout, and
// reports false for any other.
func scanTrajectories(body []byte) (Trajectories, bool) {
	var t Trajectories
	s := ledger.CanonicalScanner{B: body}
	if !s.Lit(`{"blob":`) {
		return t, false
	}
	d, ok := s.Str()
	if !ok || t.Blob.UnmarshalText(d) != nil || !s.Lit(`,"episodes":`) {
		return t, false
	}
	switch {
	case s.Lit(`null`):
	case s.Lit(`[]`):
		t.Episodes = []EpisodeRef{}
	case s.Lit(`[`):
		t.Episodes = make([]EpisodeRef, 0, bytes.Count(body, []byte(`{"final_sql":`)))
		for {
			r, ok := scanEpisodeRef(&s)
			if !ok {
				return t, false
			}
			t.Episodes = append(t.Episodes, r)
			if s.Lit(`]`) {
				break
			}
			if !s.Lit(`,`) {
				return t, false
			}
		}
	default:
		return t, false
	}
	return t, s.Lit(`}`) && s.Done()
}

// scanEpisodeRef reads one reference, its fields in canonical order.
func scanEpisodeRef(s *ledger.CanonicalScanner) (EpisodeRef, bool) {
	var r EpisodeRef
	str := func(key string, v *string) bool {
		if !s.Lit(key) {
			return false
		}
		b, ok := s.Str()
		*v = string(b)
		return ok
	}
	i64 := func(key string, v *int64) bool {
		if !s.Lit(key) {
			return false
		}
		n, ok := s.Int()
		*v = n
		return ok
	}
	// int fields take what fits an int, as encoding/json does.
	i := func(key string, v *int) bool {
		var n int64
		ok := i64(key, &n) && int64(int(n)) == n
		*v = int(n)
		return ok
	}
	var stop string
	ok := str(`{"final_sql":`, &r.FinalSQL) &&
		i64(`,"length":`, &r.Length) &&
		i(`,"line":`, &r.Line) &&
		i64(`,"offset":`, &r.Offset) &&
		i(`,"sample":`, &r.Sample) &&
		i(`,"sql_executions":`, &r.SQLExecutions) &&
		str(`,"stop_reason":`, &stop) &&
		str(`,"task_id":`, &r.TaskID) &&
		i(`,"tokens_in":`, &r.TokensIn) &&
		i(`,"tokens_out":`, &r.TokensOut) &&
		i(`,"turns":`, &r.Turns) &&
		s.Lit(`}`)
	r.StopReason = StopReason(stop)
	return r, ok
}
