package grade

import (
	"context"
	"strings"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

// naiveQuery returns q with every call of SUM, AVG or TOTAL replaced by
// its naive twin, and whether there was one.
func naiveQuery(q string) (string, bool) {
	toks := lexSQL(q)
	found := false
	for i, t := range toks {
		naive, ok := sqlenv.NaiveAggregates[strings.ToLower(t.text)]
		if !ok || t.kind != tokWord {
			continue
		}
		j := i + 1
		for j < len(toks) && (toks[j].kind == tokSpace || toks[j].kind == tokComment) {
			j++
		}
		if j < len(toks) && toks[j].text == "(" {
			toks[i].text, found = naive, true
		}
	}
	return joinTokens(toks), found
}

// summationFragile grades o's queries again with SUM, AVG and TOTAL added
// left to right, as SQLite before 3.43 adds them, when either query calls
// one and returned a float, and says why the verdict is fragile when the
// verdict then differs; "" otherwise. A query that fails that way (a
// window function) leaves the verdict unflagged.
func (g *Grader) summationFragile(ctx context.Context, m Metric, dbPath string, o Judgement, predSQL, goldSQL string) string {
	if o.Pred.Err != nil || o.Gold.Err != nil || (!hasReal(o.Pred.Rows) && !hasReal(o.Gold.Rows)) {
		return ""
	}
	naive := func(q string, d Denotation) (Denotation, bool) {
		nq, ok := naiveQuery(q)
		if !ok {
			return d, false
		}
		n := g.Execute(ctx, m, dbPath, nq, g.timeout(m))
		return n, n.Err == nil
	}
	pred, pOK := naive(predSQL, o.Pred)
	gold, gOK := naive(goldSQL, o.Gold)
	if !pOK && !gOK || pred.Err != nil || gold.Err != nil {
		return ""
	}
	if Compare(m, pred, gold).Correct == o.Correct {
		return ""
	}
	verdict := "wrong"
	if !o.Correct {
		verdict = "correct"
	}
	return "SUM/AVG/TOTAL over floats: added left to right, as SQLite before 3.43 adds them, the verdict would be " + verdict
}
