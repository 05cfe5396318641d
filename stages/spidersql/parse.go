package spidersql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The official evaluator's operator tables; an operator's index is its id.
var (
	clauseKeywords = []string{"select", "from", "where", "group", "order", "limit", "intersect", "union", "except"}
	joinKeywords   = []string{"join", "on", "as"}
	whereOps       = []string{"not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists"}
	unitOps        = []string{"none", "-", "+", "*", "/"}
	aggOps         = []string{"none", "max", "min", "count", "sum", "avg"}
	condOps        = []string{"and", "or"}
	sqlOps         = []string{"intersect", "union", "except"}
	orderOps       = []string{"desc", "asc"}
)

var (
	opBetween = slices.Index(whereOps, "between")
	opLike    = slices.Index(whereOps, "like")
)

// Schema is a database's tables, each with its columns, every name
// lower-cased, as process_sql.get_schema reads them.
type Schema map[string][]string

// colID is the official id of a column of a table: __table.column__, or
// __all__ for *; ok is false when there is no such column.
func (s Schema) colID(table, col string) (string, bool) {
	if slices.Contains(s[table], col) {
		return "__" + table + "." + col + "__", true
	}
	return "", false
}

// ColUnit is (aggregate id, column id, DISTINCT).
type ColUnit struct {
	Agg      int
	Col      string
	Distinct bool
}

// ValUnit is (unit operator id, column, second column or nil).
type ValUnit struct {
	Op     int
	C1, C2 *ColUnit
}

// Value is a condition's right-hand side: a number, a string (with its
// quotes), a column or a query; nil when absent.
type Value struct {
	Num   *float64
	Str   string
	Col   *ColUnit
	Query *Query
}

// CondUnit is (NOT, operator id, left side, value, second value).
type CondUnit struct {
	Not    bool
	Op     int
	Val    ValUnit
	V1, V2 *Value
}

// CondItem is one element of a condition list: a CondUnit, or a
// conjunction ("and", "or") when Unit is nil. The official list is read
// by position (units at even, conjunctions at odd places) even where a
// unit follows a unit, so the position is what counts.
type CondItem struct {
	Unit *CondUnit
	Conj string
}

// Condition is a condition list.
type Condition []CondItem

// evens and odds are the official cond[::2] and cond[1::2].
func (c Condition) evens() []CondItem { return c.step(0) }
func (c Condition) odds() []CondItem  { return c.step(1) }

func (c Condition) step(from int) []CondItem {
	out := make([]CondItem, 0, (len(c)-from+1)/2)
	for i := from; i < len(c); i += 2 {
		out = append(out, c[i])
	}
	return out
}

// SelItem is (aggregate id, value).
type SelItem struct {
	Agg int
	Val ValUnit
}

// TableUnit is a FROM item: a table (Table, its id __table__) or a query.
type TableUnit struct {
	Table string
	Query *Query
}

// OrderBy is a direction and the values ordered by.
type OrderBy struct {
	Dir  string
	Vals []ValUnit
}

// Query is the parse of one SELECT, as process_sql's sql dict.
type Query struct {
	Distinct  bool
	Select    []SelItem
	From      []TableUnit
	FromConds Condition
	Where     Condition
	GroupBy   []ColUnit
	Having    Condition
	OrderBy   *OrderBy
	Limit     *int
	Intersect *Query
	Union     *Query
	Except    *Query
}

// ParseError is a query the official parser cannot parse.
type ParseError struct{ Msg string }

func (e *ParseError) Error() string { return e.Msg }

// parser holds the tokens, the aliases and the schema of one Parse.
type parser struct {
	toks   []string
	alias  map[string]string
	schema Schema
	depth  int // of nested queries being parsed
}

// maxDepth bounds query nesting, so that a hostile prediction cannot
// exhaust the stack; Python's recursion limit stops the official parser
// about as deep, and it scores such a prediction 0 too.
const maxDepth = 200

// fail stops the parse; Parse turns it into its error.
func fail(format string, args ...any) { panic(&ParseError{fmt.Sprintf(format, args...)}) }

// tok is toks[i], failing past the end as Python's IndexError does.
func (p *parser) tok(i int) string {
	if i < 0 || i >= len(p.toks) {
		fail("unexpected end of query")
	}
	return p.toks[i]
}

// Parse parses q against the schema as process_sql.get_sql does.
func Parse(schema Schema, q string) (_ *Query, err error) {
	toks, err := Tokenize(q)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, alias: map[string]string{}, schema: schema}
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(*ParseError)
			if !ok {
				panic(r)
			}
			err = pe
		}
	}()
	// Every "x AS y" declares alias y for x, a column alias included; an
	// alias that is a table's name is refused.
	for i, t := range toks {
		if t == "as" {
			prev := i - 1
			if prev < 0 {
				prev = len(toks) - 1
			}
			p.alias[p.tok(i+1)] = toks[prev]
		}
	}
	for table := range schema {
		if _, ok := p.alias[table]; ok {
			fail("alias %s has the same name as a table", table)
		}
		p.alias[table] = table
	}
	_, sql := p.parseSQL(0)
	return sql, nil
}

func (p *parser) parseCol(i int, defaults []string) (int, string) {
	t := p.tok(i)
	if t == "*" {
		return i + 1, "__all__"
	}
	if strings.Contains(t, ".") {
		parts := strings.Split(t, ".")
		if len(parts) != 2 {
			fail("column %s", t)
		}
		table, ok := p.alias[parts[0]]
		if !ok {
			fail("unknown table or alias %s", parts[0])
		}
		id, ok := p.schema.colID(table, parts[1])
		if !ok {
			fail("unknown column %s", t)
		}
		return i + 1, id
	}
	if len(defaults) == 0 {
		fail("column %s without a table", t)
	}
	for _, a := range defaults {
		if id, ok := p.schema.colID(p.alias[a], t); ok {
			return i + 1, id
		}
	}
	fail("unknown column %s", t)
	return 0, ""
}

func (p *parser) parseColUnit(i int, defaults []string) (int, ColUnit) {
	block := false
	if p.tok(i) == "(" {
		block = true
		i++
	}
	agg := slices.Index(aggOps, p.tok(i))
	if agg >= 0 {
		i++
		if i >= len(p.toks) || p.toks[i] != "(" {
			fail("expected ( after %s", aggOps[agg])
		}
		i++
	}
	distinct := p.tok(i) == "distinct"
	if distinct {
		i++
	}
	var col string
	i, col = p.parseCol(i, defaults)
	if agg >= 0 {
		// The aggregate's ")" closes it; a "(" before the aggregate is
		// left open, as the official parser leaves it.
		if i >= len(p.toks) || p.toks[i] != ")" {
			fail("expected ) after %s(", aggOps[agg])
		}
		return i + 1, ColUnit{Agg: agg, Col: col, Distinct: distinct}
	}
	if block {
		if p.tok(i) != ")" {
			fail("expected )")
		}
		i++
	}
	return i, ColUnit{Col: col, Distinct: distinct}
}

func (p *parser) parseValUnit(i int, defaults []string) (int, ValUnit) {
	block := false
	if p.tok(i) == "(" {
		block = true
		i++
	}
	var v ValUnit
	var c1 ColUnit
	i, c1 = p.parseColUnit(i, defaults)
	v.C1 = &c1
	if i < len(p.toks) {
		if op := slices.Index(unitOps, p.toks[i]); op >= 0 {
			v.Op = op
			var c2 ColUnit
			i, c2 = p.parseColUnit(i+1, defaults)
			v.C2 = &c2
		}
	}
	if block {
		if p.tok(i) != ")" {
			fail("expected )")
		}
		i++
	}
	return i, v
}

func (p *parser) parseTableUnit(i int) (int, string) {
	table, ok := p.alias[p.tok(i)]
	if !ok {
		fail("unknown table %s", p.tok(i))
	}
	if _, ok := p.schema[table]; !ok {
		fail("unknown table %s", table)
	}
	if i+1 < len(p.toks) && p.toks[i+1] == "as" {
		return i + 3, table
	}
	return i + 1, table
}

// pyFloat reports whether Python's float() accepts t, and its value.
func pyFloat(t string) (float64, bool) {
	if strings.ContainsAny(t, "xXpP") {
		return 0, false // Go reads hexadecimal floats, Python does not
	}
	if strings.Contains(t, "_") {
		for i := 0; i < len(t); i++ {
			if t[i] == '_' && (i == 0 || i == len(t)-1 || !isDigit(t[i-1]) || !isDigit(t[i+1])) {
				return 0, false
			}
		}
		t = strings.ReplaceAll(t, "_", "")
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func (p *parser) parseValue(start int, defaults []string) (int, *Value) {
	i := start
	block := false
	if p.tok(i) == "(" {
		block = true
		i++
	}
	var v Value
	switch t := p.tok(i); {
	case t == "select":
		i, v.Query = p.parseSQL(i)
	case strings.Contains(t, `"`):
		v.Str = t
		i++
	default:
		if f, ok := pyFloat(t); ok {
			v.Num = &f
			i++
			break
		}
		end := i
		for end < len(p.toks) {
			t := p.toks[end]
			if t == "," || t == ")" || t == "and" || slices.Contains(clauseKeywords, t) || slices.Contains(joinKeywords, t) {
				break
			}
			end++
		}
		// The column is read from the tokens from start to end alone.
		sub := &parser{toks: p.toks[start:end], alias: p.alias, schema: p.schema, depth: p.depth}
		_, c := sub.parseColUnit(0, defaults)
		v.Col = &c
		i = end
	}
	if block {
		if p.tok(i) != ")" {
			fail("expected )")
		}
		i++
	}
	return i, &v
}

func (p *parser) parseCondition(i int, defaults []string) (int, Condition) {
	var conds Condition
	for i < len(p.toks) {
		var u CondUnit
		i, u.Val = p.parseValUnit(i, defaults)
		if p.tok(i) == "not" {
			u.Not = true
			i++
		}
		if i >= len(p.toks) || !slices.Contains(whereOps, p.toks[i]) {
			fail("unknown condition operator %q", p.tok(i))
		}
		u.Op = slices.Index(whereOps, p.toks[i])
		i++
		i, u.V1 = p.parseValue(i, defaults)
		if u.Op == opBetween {
			if p.tok(i) != "and" {
				fail("BETWEEN without AND")
			}
			i, u.V2 = p.parseValue(i+1, defaults)
		}
		conds = append(conds, CondItem{Unit: &u})
		if i < len(p.toks) {
			t := p.toks[i]
			if slices.Contains(clauseKeywords, t) || t == ")" || t == ";" || slices.Contains(joinKeywords, t) {
				break
			}
			if slices.Contains(condOps, t) {
				conds = append(conds, CondItem{Conj: t})
				i++
			}
		}
	}
	return i, conds
}

func (p *parser) parseSelect(i int, defaults []string) (bool, []SelItem) {
	if p.tok(i) != "select" {
		fail("SELECT not found")
	}
	i++
	distinct := false
	if i < len(p.toks) && p.toks[i] == "distinct" {
		i++
		distinct = true
	}
	var items []SelItem
	for i < len(p.toks) && !slices.Contains(clauseKeywords, p.toks[i]) {
		agg := max(slices.Index(aggOps, p.toks[i]), 0)
		if slices.Contains(aggOps, p.toks[i]) {
			i++
		}
		var v ValUnit
		i, v = p.parseValUnit(i, defaults)
		items = append(items, SelItem{Agg: agg, Val: v})
		if i < len(p.toks) && p.toks[i] == "," {
			i++
		}
	}
	return distinct, items
}

func (p *parser) parseFrom(start int) (int, []TableUnit, Condition, []string) {
	at := slices.Index(p.toks[min(start, len(p.toks)):], "from")
	if at < 0 {
		fail("FROM not found")
	}
	i := start + at + 1
	var units []TableUnit
	var conds Condition
	var defaults []string
	for i < len(p.toks) {
		block := false
		if p.tok(i) == "(" {
			block = true
			i++
		}
		if p.tok(i) == "select" {
			var q *Query
			i, q = p.parseSQL(i)
			units = append(units, TableUnit{Query: q})
		} else {
			if i < len(p.toks) && p.toks[i] == "join" || p.tok(i) == "," {
				i++
			}
			var table string
			i, table = p.parseTableUnit(i)
			units = append(units, TableUnit{Table: table})
			defaults = append(defaults, table)
		}
		if i < len(p.toks) && p.toks[i] == "on" {
			var c Condition
			i, c = p.parseCondition(i+1, defaults)
			if len(conds) > 0 {
				conds = append(conds, CondItem{Conj: "and"})
			}
			conds = append(conds, c...)
		}
		if block {
			if p.tok(i) != ")" {
				fail("expected )")
			}
			i++
		}
		if i < len(p.toks) && (slices.Contains(clauseKeywords, p.toks[i]) || p.toks[i] == ")" || p.toks[i] == ";") {
			break
		}
	}
	return i, units, conds, defaults
}

func (p *parser) parseWhereLike(i int, word string, defaults []string) (int, Condition) {
	if i >= len(p.toks) || p.toks[i] != word {
		return i, nil
	}
	return p.parseCondition(i+1, defaults)
}

func (p *parser) parseGroupBy(i int, defaults []string) (int, []ColUnit) {
	if i >= len(p.toks) || p.toks[i] != "group" {
		return i, nil
	}
	if p.tok(i+1) != "by" {
		fail("GROUP without BY")
	}
	i += 2
	var cols []ColUnit
	for i < len(p.toks) && !(slices.Contains(clauseKeywords, p.toks[i]) || p.toks[i] == ")" || p.toks[i] == ";") {
		var c ColUnit
		i, c = p.parseColUnit(i, defaults)
		cols = append(cols, c)
		if i < len(p.toks) && p.toks[i] == "," {
			i++
		} else {
			break
		}
	}
	return i, cols
}

func (p *parser) parseOrderBy(i int, defaults []string) (int, *OrderBy) {
	if i >= len(p.toks) || p.toks[i] != "order" {
		return i, nil
	}
	if p.tok(i+1) != "by" {
		fail("ORDER without BY")
	}
	i += 2
	o := &OrderBy{Dir: "asc", Vals: []ValUnit{}}
	for i < len(p.toks) && !(slices.Contains(clauseKeywords, p.toks[i]) || p.toks[i] == ")" || p.toks[i] == ";") {
		var v ValUnit
		i, v = p.parseValUnit(i, defaults)
		o.Vals = append(o.Vals, v)
		if i < len(p.toks) && slices.Contains(orderOps, p.toks[i]) {
			o.Dir = p.toks[i]
			i++
		}
		if i < len(p.toks) && p.toks[i] == "," {
			i++
		} else {
			break
		}
	}
	return i, o
}

func (p *parser) skipSemicolons(i int) int {
	for i < len(p.toks) && p.toks[i] == ";" {
		i++
	}
	return i
}

func (p *parser) parseSQL(start int) (int, *Query) {
	if p.depth++; p.depth > maxDepth {
		fail("queries nested more than %d deep", maxDepth)
	}
	defer func() { p.depth-- }()
	i := start
	block := false
	if p.tok(i) == "(" {
		block = true
		i++
	}
	q := &Query{}
	fromEnd, units, conds, defaults := p.parseFrom(start)
	q.From, q.FromConds = units, conds
	q.Distinct, q.Select = p.parseSelect(i, defaults)
	i = fromEnd
	i, q.Where = p.parseWhereLike(i, "where", defaults)
	i, q.GroupBy = p.parseGroupBy(i, defaults)
	i, q.Having = p.parseWhereLike(i, "having", defaults)
	i, q.OrderBy = p.parseOrderBy(i, defaults)
	if i < len(p.toks) && p.toks[i] == "limit" {
		// The official parser skips the value and records 1: it tests
		// whether the token is an int, and tokens are strings.
		i += 2
		one := 1
		q.Limit = &one
	}
	i = p.skipSemicolons(i)
	if block {
		if p.tok(i) != ")" {
			fail("expected )")
		}
		i++
	}
	i = p.skipSemicolons(i)
	if i < len(p.toks) && slices.Contains(sqlOps, p.toks[i]) {
		op := p.toks[i]
		var sub *Query
		i, sub = p.parseSQL(i + 1)
		switch op {
		case "intersect":
			q.Intersect = sub
		case "union":
			q.Union = sub
		default:
			q.Except = sub
		}
	}
	return i, q
}
