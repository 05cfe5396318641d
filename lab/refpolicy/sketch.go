package refpolicy

import (
	"slices"
	"strconv"
	"strings"
)

// cand is one candidate of a slot: what it renders and its hashed
// features (each with value 1).
type cand struct {
	none  bool
	agg   string // select: "", count, max, min, avg, sum
	col   string // the column, "*" for count(*) and SELECT *
	op    string // where: =, >, <
	val   string // where: the SQL literal
	desc  bool   // order
	limit int
	feats []int32
}

// sketch holds every slot's candidates for one prompt, the table's slots
// per table.
type sketch struct {
	tables []cand
	slots  [][numSlots][]cand // per table; index SlotTable unused
	names  []string           // table names
}

// Choice is a filled sketch: the index of the chosen candidate of every
// slot (Choice[SlotTable] is the table).
type Choice [numSlots]int

var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the of in on at to for from by with and or is are was were be been what which who whom whose
		how many much show list find give return tell me all each every that this these those there their its it as do does did
		have has had number name names id ids than more less most least not no any please display count total per`) {
		stopwords[w] = true
	}
}

// qfeats are the question's unigram and bigram features.
func qfeats(words []string) []string {
	var out []string
	for i, w := range words {
		out = append(out, "u:"+w)
		if i+1 < len(words) {
			out = append(out, "b:"+w+"_"+words[i+1])
		}
	}
	out = append(out, "u:<bias>")
	return out
}

// match says how much of a name's tokens the question mentions: "full",
// "partial" or "none".
func match(tokens []string, words []string) string {
	if len(tokens) == 0 {
		return "none"
	}
	n := 0
	for _, t := range tokens {
		if slices.Contains(words, t) {
			n++
		}
	}
	switch {
	case n == len(tokens):
		return "full"
	case n > 0:
		return "partial"
	}
	return "none"
}

// hashFeat is feature s's bucket: FNV-1a 32 of its name modulo Dim.
//
// NB: a checkpoint's weights mean something only under the feature names
// and this hash; renaming a feature or changing the hash silently changes
// what every saved checkpoint answers (bump Format when doing so).
func hashFeat(s string) int32 { return hashParts(s) }

// hashParts is hashFeat of the parts' concatenation. FNV-1a reads its
// input a byte at a time, so hashing the parts in turn gives the same
// bucket without building the name: a sketch hashes some hundred thousand
// feature names, and joining them was most of the policy server's time.
func hashParts(parts ...string) int32 {
	const offset32, prime32 = 2166136261, 16777619
	h := uint32(offset32)
	for _, s := range parts {
		for i := 0; i < len(s); i++ {
			h ^= uint32(s[i])
			h *= prime32
		}
	}
	return int32(h & (Dim - 1))
}

// featurizer builds one candidate's feature list.
type featurizer struct {
	q     []string // question features
	words []string
	out   []int32
}

// add adds the feature named by the concatenation of parts.
func (f *featurizer) add(parts ...string) { f.out = append(f.out, hashParts(parts...)) }

// cross adds property p crossed with every question feature, and p alone.
func (f *featurizer) cross(p string) {
	f.add(p)
	for _, q := range f.q {
		f.add(p, "|", q)
	}
}

// column adds the features of a column mention: how well the question
// names it, crossed with property p, and the column's words crossed with
// the question's words.
func (f *featurizer) column(p string, c *Column) {
	m := match(c.tokens, f.words)
	f.add(p, "|col:", m)
	kind := "other"
	switch {
	case c.Numeric:
		kind = "num"
	case c.Text:
		kind = "text"
	}
	f.add(p, "|kind:", kind)
	for _, t := range c.tokens {
		f.add(p, "|tok:", t)
		for i, w := range f.words {
			f.add(p, "|qc:", w, "|", t)
			if w != t {
				continue
			}
			// the words around a mention: "average age", "each
			// nationality", "age older than"
			f.context(p, i)
		}
	}
}

// context adds the words before and after question position i.
func (f *featurizer) context(p string, i int) {
	if i > 0 {
		f.add(p, "|prev:", f.words[i-1])
		if i > 1 {
			f.add(p, "|prev2:", f.words[i-2], "_", f.words[i-1])
		}
	}
	if i+1 < len(f.words) {
		f.add(p, "|next:", f.words[i+1])
	}
}

// take returns the candidate's features and starts the next candidate's
// in the same buffer, so the list grows once per sketch, not once per
// candidate.
func (f *featurizer) take() []int32 {
	out := slices.Clone(f.out)
	f.out = f.out[:0]
	return out
}

// hit is a value the probe found: table, column and the stored value.
type hit struct{ table, col, val string }

// buildSketch enumerates the candidates of every slot for a prompt and
// the probe's hits.
func buildSketch(p *Prompt, hits []hit) *sketch {
	f := &featurizer{q: qfeats(p.words), words: p.words}
	sk := &sketch{}
	var nums []number
	for i, w := range p.raw {
		if isNumber(w) {
			nums = append(nums, number{w, i})
		}
	}
	for ti := range p.Tables {
		t := &p.Tables[ti]
		sk.names = append(sk.names, t.Name)
		f.add("tbl:", match(t.tokens, p.words))
		full := 0
		for ci := range t.Columns {
			if match(t.Columns[ci].tokens, p.words) == "full" {
				full++
			}
		}
		f.add("tbl:colhits=" + strconv.Itoa(min(full, 3)))
		for _, h := range hits {
			if h.table == t.Name {
				f.add("tbl:valuehit")
				break
			}
		}
		for _, tok := range t.tokens {
			for _, w := range p.words {
				f.add("qt:", w, "|", tok)
			}
		}
		sk.tables = append(sk.tables, cand{col: t.Name, feats: f.take()})
		sk.slots = append(sk.slots, tableSlots(f, t, hits, nums))
	}
	return sk
}

// number is a number of the question and its position among the words.
type number struct {
	text string
	at   int
}

func tableSlots(f *featurizer, t *Table, hits []hit, nums []number) [numSlots][]cand {
	// Each list is made at its size or a little over: grown by appending,
	// the candidates were copied several times per table.
	n, numeric := len(t.Columns), 0
	for ci := range t.Columns {
		if t.Columns[ci].Numeric {
			numeric++
		}
	}
	var s [numSlots][]cand
	s[SlotSelect] = make([]cand, 0, 2+n+4*numeric)
	s[SlotSelect2] = make([]cand, 0, 1+n)
	s[SlotGroup] = make([]cand, 0, 1+n)
	s[SlotWhere] = make([]cand, 0, 1+len(hits)+3*numeric*len(nums))
	s[SlotOrder] = make([]cand, 0, 1+2*(1+n))
	s[SlotLimit] = make([]cand, 0, 2+len(nums))
	// select
	f.cross("sel:star|agg=count")
	s[SlotSelect] = append(s[SlotSelect], cand{agg: "count", col: "*", feats: f.take()})
	f.cross("sel:star|agg=")
	s[SlotSelect] = append(s[SlotSelect], cand{col: "*", feats: f.take()})
	for ci := range t.Columns {
		c := &t.Columns[ci]
		aggs := []string{""}
		if c.Numeric {
			aggs = append(aggs, "max", "min", "avg", "sum")
		}
		for _, a := range aggs {
			f.cross("sel:agg=" + a)
			f.column("sel:agg="+a, c)
			if ci == 0 {
				f.add("sel:first|agg=" + a)
			}
			s[SlotSelect] = append(s[SlotSelect], cand{agg: a, col: c.Name, feats: f.take()})
		}
	}
	// select2, group: none or a column
	for _, sl := range []Slot{SlotSelect2, SlotGroup} {
		name := sl.String()
		f.cross(name + ":none")
		s[sl] = append(s[sl], cand{none: true, feats: f.take()})
		for ci := range t.Columns {
			c := &t.Columns[ci]
			f.cross(name + ":some")
			f.column(name, c)
			s[sl] = append(s[sl], cand{col: c.Name, feats: f.take()})
		}
	}
	// where
	f.cross("where:none")
	s[SlotWhere] = append(s[SlotWhere], cand{none: true, feats: f.take()})
	for ci := range t.Columns {
		c := &t.Columns[ci]
		for _, h := range hits {
			if h.table != t.Name || h.col != c.Name {
				continue
			}
			f.cross("where:op==|value")
			f.column("where:value", c)
			s[SlotWhere] = append(s[SlotWhere], cand{col: c.Name, op: "=", val: quoteString(h.val), feats: f.take()})
		}
		if !c.Numeric {
			continue
		}
		for _, n := range nums {
			for _, op := range []string{"=", ">", "<"} {
				f.cross("where:op=" + op + "|number")
				f.column("where:number|op="+op, c)
				f.context("where:numctx|op="+op, n.at)
				s[SlotWhere] = append(s[SlotWhere], cand{col: c.Name, op: op, val: n.text, feats: f.take()})
			}
		}
	}
	// order
	f.cross("order:none")
	s[SlotOrder] = append(s[SlotOrder], cand{none: true, feats: f.take()})
	for _, desc := range []bool{false, true} {
		dir := dirName(desc)
		f.cross("order:count|" + dir)
		s[SlotOrder] = append(s[SlotOrder], cand{col: "*", agg: "count", desc: desc, feats: f.take()})
		for ci := range t.Columns {
			c := &t.Columns[ci]
			f.cross("order:col|" + dir)
			f.column("order:"+dir, c)
			s[SlotOrder] = append(s[SlotOrder], cand{col: c.Name, desc: desc, feats: f.take()})
		}
	}
	// limit
	f.cross("limit:none")
	s[SlotLimit] = append(s[SlotLimit], cand{none: true, feats: f.take()})
	f.cross("limit:one")
	s[SlotLimit] = append(s[SlotLimit], cand{limit: 1, feats: f.take()})
	for _, n := range nums {
		if v, err := strconv.Atoi(n.text); err == nil && v > 1 && v <= 100 {
			f.cross("limit:number")
			f.context("limit:numctx", n.at)
			s[SlotLimit] = append(s[SlotLimit], cand{limit: v, feats: f.take()})
		}
	}
	return s
}

func dirName(desc bool) string {
	if desc {
		return "DESC"
	}
	return "ASC"
}

// candidates returns slot s's candidates given the chosen table.
func (sk *sketch) candidates(s Slot, table int) []cand {
	if s == SlotTable {
		return sk.tables
	}
	return sk.slots[table][s]
}

// used says which slots a choice's SQL shows: an aggregate without GROUP
// BY gives one row, so its ORDER BY and LIMIT would change nothing and
// are left out, as is a second column equal to the first or after *.
// Slots left out carry no probability in training (their choice cannot
// be seen in the answer).
func (sk *sketch) used(c Choice) [numSlots]bool {
	t := c[SlotTable]
	get := func(s Slot) cand { return sk.slots[t][s][c[s]] }
	sel, sel2, group := get(SlotSelect), get(SlotSelect2), get(SlotGroup)
	u := [numSlots]bool{true, true, true, true, true, true, true}
	if sel.agg != "" && group.none {
		u[SlotOrder], u[SlotLimit] = false, false
	}
	if sel.col == "*" || !sel2.none && sel2.col == sel.col && sel.agg == "" {
		u[SlotSelect2] = false
	}
	return u
}

// render writes the SQL of a choice.
func (sk *sketch) render(c Choice) string {
	t := c[SlotTable]
	u := sk.used(c)
	get := func(s Slot) cand {
		if !u[s] {
			return cand{none: true}
		}
		return sk.slots[t][s][c[s]]
	}
	sel, sel2, where, group, order, limit := get(SlotSelect), get(SlotSelect2), get(SlotWhere), get(SlotGroup), get(SlotOrder), get(SlotLimit)
	var list []string
	if !group.none {
		list = append(list, quoteIdent(group.col))
	}
	list = append(list, expr(sel.agg, sel.col))
	if !sel2.none {
		list = append(list, quoteIdent(sel2.col))
	}
	var b strings.Builder
	b.WriteString("SELECT " + strings.Join(list, ", ") + " FROM " + quoteIdent(sk.names[t]))
	if !where.none {
		b.WriteString(" WHERE " + describeSQL(SlotWhere, where))
	}
	if !group.none {
		b.WriteString(" GROUP BY " + quoteIdent(group.col))
	}
	if !order.none {
		b.WriteString(" ORDER BY " + describeSQL(SlotOrder, order))
	}
	if !limit.none {
		b.WriteString(" LIMIT " + strconv.Itoa(limit.limit))
	}
	return b.String()
}

func expr(agg, col string) string {
	c := col
	if c != "*" {
		c = quoteIdent(col)
	}
	if agg == "" {
		return c
	}
	return agg + "(" + c + ")"
}

// quoteIdent quotes a name only when it needs it.
func quoteIdent(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
		}
	}
	if plain && !sqlKeywords[strings.ToLower(s)] {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

var sqlKeywords = map[string]bool{"order": true, "group": true, "select": true, "from": true, "where": true, "limit": true, "by": true,
	"table": true, "index": true, "join": true, "on": true, "as": true, "and": true, "or": true, "not": true, "in": true, "is": true}

func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
