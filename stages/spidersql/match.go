package spidersql

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// KeyMap maps a column id (__table.column__) to the id of the first column
// (in tables.json order) of its foreign-key group: exact match counts two
// columns joined by a foreign key as the same column.
type KeyMap map[string]string

// ForeignKeyMap builds the KeyMap of one tables.json entry as the official
// build_foreign_key_map does: columns are the (table index, name) pairs of
// column_names_original (table -1 is *), pairs the foreign_keys; each pair
// joins the first group holding either column (groups are not merged
// further), and every column of a group maps to its lowest-indexed one.
func ForeignKeyMap(tables []string, columns []Column, pairs [][2]int) KeyMap {
	ids := make([]string, len(columns))
	for i, c := range columns {
		ids[i] = "__all__"
		if c.Table >= 0 && c.Table < len(tables) {
			ids[i] = "__" + strings.ToLower(tables[c.Table]) + "." + strings.ToLower(c.Name) + "__"
		}
	}
	var groups []map[int]bool
	for _, p := range pairs {
		var g map[int]bool
		for _, s := range groups {
			if s[p[0]] || s[p[1]] {
				g = s
				break
			}
		}
		if g == nil {
			g = map[int]bool{}
			groups = append(groups, g)
		}
		g[p[0]], g[p[1]] = true, true
	}
	m := KeyMap{}
	for _, g := range groups {
		idx := make([]int, 0, len(g))
		for i := range g {
			if i < 0 || i >= len(ids) {
				return m // a pair naming no column: the official code would fail
			}
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			m[ids[i]] = ids[idx[0]]
		}
	}
	return m
}

// Column is one entry of tables.json's column_names_original.
type Column struct {
	Table int
	Name  string
}

// ExactMatch is the official exact set match (evaluation.py --etype match,
// default flags: values and DISTINCT ignored) of a prediction against a
// gold query on one database. The prediction is read as the official
// evaluate() reads it: only its first tab-separated field, every "value"
// replaced by "1". A prediction the parser rejects is compared as an
// empty query, as there, and parseErr says why; the gold must parse.
func ExactMatch(schema Schema, kmap KeyMap, pred, gold string) (match bool, parseErr, goldErr error) {
	g, err := PrepareGold(schema, kmap, gold)
	if err != nil {
		return false, nil, err
	}
	p, parseErr := PreparePrediction(schema, kmap, pred)
	return Match(p, g), parseErr, nil
}

// Prepared is a query parsed and rebuilt for exact match on one
// database, so that a grading parses a query it meets again (the same
// gold for two questions, the same prediction twice) once. It is only
// read once made, so goroutines may match it at once.
type Prepared struct{ e *em }

// PrepareGold reads a gold query as ExactMatch does; it must parse.
func PrepareGold(schema Schema, kmap KeyMap, gold string) (*Prepared, error) {
	g, err := Parse(schema, gold)
	if err != nil {
		return nil, err
	}
	return &Prepared{rebuild(g, validColumns(schema, g), kmap, true)}, nil
}

// PreparePrediction reads a prediction as ExactMatch does; one the parser
// rejects is prepared as the empty query, and parseErr says why.
func PreparePrediction(schema Schema, kmap KeyMap, pred string) (_ *Prepared, parseErr error) {
	pred, _, _ = strings.Cut(pred, "\t")
	p, parseErr := Parse(schema, strings.ReplaceAll(pred, "value", "1"))
	if parseErr != nil {
		p = &Query{}
	}
	return &Prepared{rebuild(p, validColumns(schema, p), kmap, true)}, parseErr
}

// Match is the exact set match of a prepared prediction against a
// prepared gold.
func Match(pred, gold *Prepared) bool { return exact(pred.e, gold.e) }

// validCols is build_valid_col_units: the ids of every column of the
// tables q's outermost FROM names, tested in place (has) rather than
// built as a set, which cost a string per column of every such table.
type validCols struct {
	schema Schema
	from   []string // the FROM tables that are tables, not subqueries
}

func validColumns(s Schema, q *Query) validCols {
	v := validCols{schema: s}
	for _, t := range q.From {
		if t.Query == nil {
			v.from = append(v.from, t.Table)
		}
	}
	return v
}

// has reports whether id is "__" + t + "." + c + "__" for a FROM table t
// and a column c of t.
func (v validCols) has(id string) bool {
	for _, t := range v.from {
		n := len(t)
		if len(id) >= n+5 && id[:2] == "__" && id[2:2+n] == t && id[2+n] == '.' && id[len(id)-2:] == "__" &&
			slices.Contains(v.schema[t], id[3+n:len(id)-2]) {
			return true
		}
	}
	return false
}

// The rebuilt query, every part as the string key Python's == would tell
// apart: values dropped from conditions (rebuild_sql_val), columns of the
// FROM tables mapped through the KeyMap and DISTINCT erased
// (rebuild_sql_col), in the outer query and its INTERSECT, UNION and
// EXCEPT; subqueries in conditions lose their values only, and those in
// FROM stay as parsed.
type em struct {
	sel       []string // (agg, val unit)
	selVals   []string // val unit
	where     []string // where[::2]
	whereVals []string // their val units
	whereOps  []string // where[1::2]
	groupCols []string // group by column ids
	having    string
	order     string
	hasOrder  bool
	hasLimit  bool
	tables    []string
	keywords  keywordSet
	iue       [3]*em // intersect, except, union
}

// rebuild turns q into its rebuilt keys; top says whether columns are
// rebuilt (rebuild_sql_col reaches the outer query and its set operands).
func rebuild(q *Query, valid validCols, kmap KeyMap, top bool) *em {
	if q == nil {
		return nil
	}
	k := keyer{valid: valid, kmap: kmap, cols: top, values: false}
	evens, odds := q.Where.evens(), q.Where.odds()
	e := &em{keywords: keywords(q), hasOrder: q.OrderBy != nil, hasLimit: q.Limit != nil,
		sel: make([]string, 0, len(q.Select)), selVals: make([]string, 0, len(q.Select)),
		where: make([]string, 0, len(evens)), whereVals: make([]string, 0, len(evens)), whereOps: make([]string, 0, len(odds)),
		groupCols: make([]string, 0, len(q.GroupBy)), tables: make([]string, 0, len(q.From))}
	for _, s := range q.Select {
		v := k.valUnit(s.Val)
		e.sel = append(e.sel, strconv.Itoa(s.Agg)+v)
		e.selVals = append(e.selVals, v)
	}
	for _, it := range evens {
		e.where = append(e.where, k.condItem(it))
		if it.Unit != nil {
			e.whereVals = append(e.whereVals, k.valUnit(it.Unit.Val))
		} else {
			e.whereVals = append(e.whereVals, "conj"+it.Conj)
		}
	}
	for _, it := range odds {
		e.whereOps = append(e.whereOps, k.condItem(it))
	}
	for _, c := range q.GroupBy {
		e.groupCols = append(e.groupCols, k.col(c.Col))
	}
	e.having = k.condition(q.Having)
	if q.OrderBy != nil {
		e.order = q.OrderBy.Dir + k.valUnits(q.OrderBy.Vals)
	}
	for _, t := range q.From {
		if t.Query != nil {
			e.tables = append(e.tables, "sql"+keyer{}.query(t.Query, true))
		} else {
			e.tables = append(e.tables, "table_unit__"+t.Table+"__")
		}
	}
	e.iue = [3]*em{rebuild(q.Intersect, valid, kmap, top), rebuild(q.Except, valid, kmap, top), rebuild(q.Union, valid, kmap, top)}
	return e
}

// keyer writes parts of a query as keys. cols: map columns and erase
// DISTINCT (a rebuilt level); values: keep condition values (a FROM
// subquery, which no rebuild reaches).
type keyer struct {
	valid  validCols
	kmap   KeyMap
	cols   bool
	values bool
}

func (k keyer) col(id string) string {
	if k.cols && k.valid.has(id) {
		if m, ok := k.kmap[id]; ok {
			return m
		}
	}
	return id
}

func (k keyer) colUnit(c *ColUnit) string {
	if c == nil {
		return "None"
	}
	d := "F"
	switch {
	case k.cols:
		d = "N"
	case c.Distinct:
		d = "T"
	}
	return "(" + strconv.Itoa(c.Agg) + "," + k.col(c.Col) + "," + d + ")"
}

func (k keyer) valUnit(v ValUnit) string {
	return "(" + strconv.Itoa(v.Op) + "," + k.colUnit(v.C1) + "," + k.colUnit(v.C2) + ")"
}

func (k keyer) valUnits(vs []ValUnit) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(k.valUnit(v))
	}
	return b.String()
}

// value keys a condition value: a subquery always (its values dropped
// unless k.values, its columns never rebuilt), anything else only where
// values are kept.
func (k keyer) value(v *Value) string {
	switch {
	case v == nil:
		return "None"
	case v.Query != nil:
		return "sql" + keyer{values: k.values}.query(v.Query, k.values)
	case !k.values:
		return "None"
	case v.Num != nil:
		return "num" + strconv.FormatFloat(*v.Num, 'g', -1, 64)
	case v.Col != nil:
		return "col" + k.colUnit(v.Col)
	}
	return "str" + strconv.Quote(v.Str)
}

func (k keyer) condItem(it CondItem) string {
	if it.Unit == nil {
		return "conj" + it.Conj
	}
	u := it.Unit
	return "(" + strconv.FormatBool(u.Not) + "," + strconv.Itoa(u.Op) + "," + k.valUnit(u.Val) + "," + k.value(u.V1) + "," + k.value(u.V2) + ")"
}

func (k keyer) condition(c Condition) string {
	var b strings.Builder
	for _, it := range c {
		b.WriteString(k.condItem(it))
		b.WriteByte(';')
	}
	return b.String()
}

// query keys a whole query that no column rebuild reaches: its DISTINCT
// flags kept, its condition values kept only when values.
func (k keyer) query(q *Query, values bool) string {
	if q == nil {
		return "None"
	}
	k = keyer{values: values}
	var b strings.Builder
	b.WriteString("{d=" + strconv.FormatBool(q.Distinct) + ";sel=")
	for _, s := range q.Select {
		b.WriteString(strconv.Itoa(s.Agg) + k.valUnit(s.Val))
	}
	b.WriteString(";from=")
	for _, t := range q.From {
		if t.Query != nil {
			b.WriteString("sql" + k.query(t.Query, true))
		} else {
			b.WriteString("t:" + t.Table)
		}
		b.WriteByte(',')
	}
	b.WriteString(";on=" + k.condition(q.FromConds) + ";where=" + k.condition(q.Where) + ";group=")
	for _, c := range q.GroupBy {
		b.WriteString(k.colUnit(&c))
	}
	b.WriteString(";having=" + k.condition(q.Having) + ";order=")
	if q.OrderBy != nil {
		b.WriteString(q.OrderBy.Dir + k.valUnits(q.OrderBy.Vals))
	}
	b.WriteString(";limit=" + strconv.FormatBool(q.Limit != nil))
	b.WriteString(";i=" + k.query(q.Intersect, values) + ";e=" + k.query(q.Except, values) + ";u=" + k.query(q.Union, values) + "}")
	return b.String()
}

// keywordSet is a set of get_keywords' keywords, one bit each: a set
// per rebuilt query, compared with ==, without a map to allocate.
type keywordSet uint16

const (
	kwWhere keywordSet = 1 << iota
	kwGroup
	kwHaving
	kwAsc
	kwDesc
	kwOrder
	kwLimit
	kwExcept
	kwUnion
	kwIntersect
	kwOr
	kwNot
	kwIn
	kwLike
)

// keywords is get_keywords: the clauses and operators q uses (an ORDER
// BY adds its direction, asc or desc, beside order).
func keywords(q *Query) keywordSet {
	var res keywordSet
	add := func(ok bool, k keywordSet) {
		if ok {
			res |= k
		}
	}
	add(len(q.Where) > 0, kwWhere)
	add(len(q.GroupBy) > 0, kwGroup)
	add(len(q.Having) > 0, kwHaving)
	if q.OrderBy != nil {
		add(q.OrderBy.Dir == "desc", kwDesc)
		add(q.OrderBy.Dir != "desc", kwAsc)
		add(true, kwOrder)
	}
	add(q.Limit != nil, kwLimit)
	add(q.Except != nil, kwExcept)
	add(q.Union != nil, kwUnion)
	add(q.Intersect != nil, kwIntersect)
	in := slices.Index(whereOps, "in")
	for _, c := range q.allConds() {
		for _, it := range c.odds() {
			add(it.Unit == nil && it.Conj == "or", kwOr)
		}
		for _, it := range c.evens() {
			// A conjunction read as a condition has a truthy first field.
			add(it.Unit == nil, kwNot)
			if it.Unit != nil {
				add(it.Unit.Not, kwNot)
				add(it.Unit.Op == in, kwIn)
				add(it.Unit.Op == opLike, kwLike)
			}
		}
	}
	return res
}

// matchCount counts the items of pred found in label, each label item
// used once, as the official loops with list.remove do.
func matchCount(pred, label []string) int {
	left := slices.Clone(label)
	n := 0
	for _, p := range pred {
		if i := slices.Index(left, p); i >= 0 {
			n++
			left = slices.Delete(left, i, i+1)
		}
	}
	return n
}

// full is get_scores(...) == 1: equal totals and every predicted item
// matched.
func full(count, predTotal, labelTotal int) bool {
	return predTotal == labelTotal && count == predTotal
}

// shortCol is eval_group's column: the part after the first '.'.
func shortCol(id string) string {
	if _, after, ok := strings.Cut(id, "."); ok {
		return strings.SplitN(after, ".", 2)[0]
	}
	return id
}

// exact is eval_exact_match on rebuilt queries.
func exact(p, l *em) bool {
	if !full(matchCount(p.sel, l.sel), len(p.sel), len(l.sel)) ||
		!full(matchCount(p.selVals, l.selVals), len(p.sel), len(l.sel)) ||
		!full(matchCount(p.where, l.where), len(p.where), len(l.where)) ||
		!full(matchCount(p.whereVals, l.whereVals), len(p.where), len(l.where)) {
		return false
	}
	pg, lg := make([]string, len(p.groupCols)), make([]string, len(l.groupCols))
	for i, c := range p.groupCols {
		pg[i] = shortCol(c)
	}
	for i, c := range l.groupCols {
		lg[i] = shortCol(c)
	}
	if !full(matchCount(pg, lg), len(pg), len(lg)) {
		return false
	}
	// group (with HAVING): both group, by the same columns, same HAVING.
	pt, lt := len(p.groupCols) > 0, len(l.groupCols) > 0
	if pt != lt || pt && !(slices.Equal(p.groupCols, l.groupCols) && p.having == l.having) {
		return false
	}
	// order: the same ORDER BY, and LIMIT in both or neither.
	if p.hasOrder != l.hasOrder || l.hasOrder && !(p.order == l.order && p.hasLimit == l.hasLimit) {
		return false
	}
	// and/or: the same set of conjunctions.
	if !sameSet(p.whereOps, l.whereOps) {
		return false
	}
	// IUEN: the same set operations, each operand matching.
	for i := range p.iue {
		if (p.iue[i] == nil) != (l.iue[i] == nil) || p.iue[i] != nil && !exact(p.iue[i], l.iue[i]) {
			return false
		}
	}
	// keywords: the same set.
	if p.keywords != l.keywords {
		return false
	}
	if len(l.tables) == 0 {
		return true
	}
	pt2, lt2 := slices.Clone(p.tables), slices.Clone(l.tables)
	sort.Strings(pt2)
	sort.Strings(lt2)
	return slices.Equal(pt2, lt2)
}

func sameSet(a, b []string) bool {
	sa, sb := map[string]bool{}, map[string]bool{}
	for _, x := range a {
		sa[x] = true
	}
	for _, x := range b {
		sb[x] = true
	}
	if len(sa) != len(sb) {
		return false
	}
	for x := range sa {
		if !sb[x] {
			return false
		}
	}
	return true
}
