package spidersql

// The hardness levels, in the official order.
const (
	Easy   = "easy"
	Medium = "medium"
	Hard   = "hard"
	Extra  = "extra"
)

// Levels lists the hardness levels from easiest.
var Levels = []string{Easy, Medium, Hard, Extra}

// Hardness is evaluation.py's eval_hardness of a parsed gold query.
func Hardness(q *Query) string {
	c1, c2, others := component1(q), len(nested(q)), countOthers(q)
	switch {
	case c1 <= 1 && others == 0 && c2 == 0:
		return Easy
	case (others <= 2 && c1 <= 1 && c2 == 0) || (c1 <= 2 && others < 2 && c2 == 0):
		return Medium
	case (others > 2 && c1 <= 2 && c2 == 0) || (2 < c1 && c1 <= 3 && others <= 2 && c2 == 0) || (c1 <= 1 && others == 0 && c2 <= 1):
		return Hard
	}
	return Extra
}

// allConds is the FROM, WHERE and HAVING condition lists, each read by
// position as the official count_component1 reads them.
func (q *Query) allConds() []Condition { return []Condition{q.FromConds, q.Where, q.Having} }

// component1 counts WHERE, GROUP BY, ORDER BY, LIMIT, each FROM table
// after the first, every OR and every LIKE.
func component1(q *Query) int {
	n := 0
	for _, present := range []bool{len(q.Where) > 0, len(q.GroupBy) > 0, q.OrderBy != nil, q.Limit != nil} {
		if present {
			n++
		}
	}
	if len(q.From) > 0 {
		n += len(q.From) - 1
	}
	for _, c := range q.allConds() {
		for _, it := range c.odds() {
			if it.Unit == nil && it.Conj == "or" {
				n++
			}
		}
		for _, it := range c.evens() {
			if it.Unit != nil && it.Unit.Op == opLike {
				n++
			}
		}
	}
	return n
}

// nested is get_nestedSQL: the queries in condition values, then
// INTERSECT, EXCEPT and UNION.
func nested(q *Query) []*Query {
	var out []*Query
	for _, c := range q.allConds() {
		for _, it := range c.evens() {
			if it.Unit == nil {
				continue
			}
			for _, v := range []*Value{it.Unit.V1, it.Unit.V2} {
				if v != nil && v.Query != nil {
					out = append(out, v.Query)
				}
			}
		}
	}
	for _, s := range []*Query{q.Intersect, q.Except, q.Union} {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// countOthers is count_others: more than one aggregate, more than one
// SELECT column, more than one WHERE item, more than one GROUP BY column.
// Its aggregate count reads the first field of each item, as the
// official has_agg does: a SELECT item's aggregate, a WHERE condition's
// NOT flag, a GROUP BY or ORDER BY column's aggregate, and for HAVING
// every item: a condition's NOT flag, and any AND/OR.
func countOthers(q *Query) int {
	agg := 0
	for _, s := range q.Select {
		if s.Agg != 0 {
			agg++
		}
	}
	for _, it := range q.Where.evens() {
		if it.Unit != nil && it.Unit.Not || it.Unit == nil {
			agg++
		}
	}
	for _, c := range q.GroupBy {
		if c.Agg != 0 {
			agg++
		}
	}
	if q.OrderBy != nil {
		for _, v := range q.OrderBy.Vals {
			if v.C1 != nil && v.C1.Agg != 0 {
				agg++
			}
		}
		for _, v := range q.OrderBy.Vals {
			if v.C2 != nil && v.C2.Agg != 0 {
				agg++
			}
		}
	}
	for _, it := range q.Having {
		if it.Unit == nil || it.Unit.Not {
			agg++
		}
	}
	n := 0
	for _, more := range []bool{agg > 1, len(q.Select) > 1, len(q.Where) > 1, len(q.GroupBy) > 1} {
		if more {
			n++
		}
	}
	return n
}
