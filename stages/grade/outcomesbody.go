package grade

import "github.com/rlgate/rlgate/ledger"

// outcomesBody is the body of an offline grading's outcomes entries,
// {"items": [...]}, which writes its canonical JSON itself
// (ledger.CanonicalEncoder): through encoding/json and Canonicalize, a
// batch of Spider dev's 972 items took more time than grading their exact
// match. The members are Item's JSON fields in sorted order, each left
// out where its omitempty leaves it out; TestOutcomesBodyIsItsJSON and
// FuzzOutcomesBody hold the two together. (Trajectory gradings, whose
// items carry twice the fields, take the generic route.)
//
// NB: these bytes are hashed into the ledger: a change here changes every
// grading's entries, and the tests above must keep passing unchanged.
type outcomesBody []Item

// itemSize is room for a typical item in the body (Spider's take ~140
// bytes; one with an error message takes more, and the writer grows).
const itemSize = 160

func (b outcomesBody) EncodeCanonical(w *ledger.CanonicalWriter) {
	w.Reserve(16 + itemSize*len(b))
	w.Object()
	w.Name("items")
	w.Array()
	for i := range b {
		b[i].encodeCanonical(w)
	}
	w.End()
	w.End()
}

func (it *Item) encodeCanonical(w *ledger.CanonicalWriter) {
	w.Object()
	w.Name("correct")
	w.Bool(it.Correct)
	w.Name("db_id")
	w.String(it.DBID)
	if it.Difficulty != "" {
		w.Name("difficulty")
		w.String(it.Difficulty)
	}
	if it.Error != "" {
		w.Name("error")
		w.String(it.Error)
	}
	if it.Fragile {
		w.Name("fragile")
		w.Bool(true)
	}
	if it.FragileReason != "" {
		w.Name("fragile_reason")
		w.String(it.FragileReason)
	}
	w.Name("index")
	w.Int(int64(it.Index))
	if it.Reward != nil {
		w.Name("reward")
		w.Float(*it.Reward)
	}
	w.Name("sample")
	w.Int(int64(it.Sample))
	if it.Score != nil {
		w.Name("score")
		w.Float(*it.Score)
	}
	w.Name("task_id")
	w.String(it.TaskID)
	w.Name("verdict")
	w.String(string(it.Verdict))
	w.End()
}
