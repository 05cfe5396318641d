package dataset

import (
	"context"
	"fmt"
	"strings"

	"github.com/rlgate/rlgate/stages/spidersql"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// columnList is a database's columns as get_schema lists them, each with
// whether it is part of its table's primary key: one query serves both
// the schema and the foreign-key map (exact match needs both of every
// database it grades on).
type columnList []struct {
	table, name string
	pk          bool
}

// keysQuery lists every column of every table in sqlite_master (table,
// column, primary key position) in table_info order, marked 0, then every
// foreign key of every table (table, referenced table, from, to), marked
// 1, in one statement: a second statement for the keys cost as much as
// the first (most of it preparing the pragma join).
const keysQuery = "SELECT 0, m.name, p.name, p.pk, NULL FROM sqlite_master AS m, pragma_table_info(m.name) AS p WHERE m.type = 'table' " +
	"UNION ALL SELECT 1, m.name, f.\"table\", f.\"from\", f.\"to\" FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS f WHERE m.type = 'table'"

// columnRows reads keysQuery's column rows.
func columnRows(rows [][]sqlenv.Cell) columnList {
	cols := make(columnList, len(rows))
	for i, row := range rows {
		cols[i].table, cols[i].name = strings.ToLower(row[0].String()), strings.ToLower(row[1].String())
		cols[i].pk = row[2].Int > 0
	}
	return cols
}

// schema is the get_schema map of cols.
func (cols columnList) schema() spidersql.Schema {
	s := spidersql.Schema{}
	for _, c := range cols {
		s[c.table] = append(s[c.table], c.name)
	}
	return s
}

// UnparsedHardness is the hardness recorded for a gold query the official
// parser cannot parse (the official evaluator would stop on it).
const UnparsedHardness = "unparsed"

// goldHardness is the official Spider hardness of a gold query, or
// UnparsedHardness.
func goldHardness(s spidersql.Schema, sql string) string {
	q, err := spidersql.Parse(s, sql)
	if err != nil {
		return UnparsedHardness
	}
	return spidersql.Hardness(q)
}

// examplesPerColumn and exampleMaxLen shape the example values shown
// under each table, as the seeds' db_details does.
const (
	examplesPerColumn = 3
	exampleMaxLen     = 60
)

// RenderSchema renders a database for the prompt: each table's CREATE
// statement as stored, in creation order, followed by up to three distinct
// non-null example values per column. The same database file always gives
// the same text.
func RenderSchema(ctx context.Context, ex *sqlenv.Executor, dbPath string) (string, error) {
	tables, err := ex.Execute(ctx, dbPath, "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		return "", fmt.Errorf("render schema of %s: %w", dbPath, err)
	}
	var b strings.Builder
	for i, row := range tables.Rows {
		name, create := row[0].String(), strings.TrimSpace(row[1].String())
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(create)
		if !strings.HasSuffix(create, ";") {
			b.WriteByte(';')
		}
		cols, err := ex.Execute(ctx, dbPath, "SELECT name FROM pragma_table_info("+quoteString(name)+")")
		if err != nil {
			return "", fmt.Errorf("render schema of %s: table %s: %w", dbPath, name, err)
		}
		b.WriteString("\n-- Example values:")
		for _, c := range cols.Rows {
			col := c[0].String()
			q := fmt.Sprintf("SELECT DISTINCT %s FROM %s WHERE %s IS NOT NULL LIMIT %d", quoteIdent(col), quoteIdent(name), quoteIdent(col), examplesPerColumn)
			vals, err := ex.Execute(ctx, dbPath, q)
			if err != nil {
				return "", fmt.Errorf("render schema of %s: %s.%s: %w", dbPath, name, col, err)
			}
			var shown []string
			for _, v := range vals.Rows {
				shown = append(shown, exampleValue(v[0]))
			}
			fmt.Fprintf(&b, "\n--   %s: %s", col, strings.Join(shown, ", "))
		}
	}
	return b.String(), nil
}

// exampleValue shows a value as a SQL literal, text cut at exampleMaxLen.
func exampleValue(c sqlenv.Cell) string {
	s := c.String()
	if c.Kind != sqlenv.KindText {
		return s
	}
	if r := []rune(s); len(r) > exampleMaxLen {
		s = string(r[:exampleMaxLen]) + "…"
	}
	return quoteString(s)
}

func quoteIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// ParseSchemaKeys reads a database's tables and columns as the Spider
// evaluator's process_sql.get_schema does (every table in sqlite_master,
// its columns in table_info order, names lower-cased), and its foreign
// keys as a spidersql.KeyMap: the columns in get_schema order (as
// tables.json lists them), each foreign key (to its referenced column, or
// the referenced table's first primary key column) a pair. For the 19
// Spider dev databases the map equals the one tables.json's foreign_keys
// give.
func ParseSchemaKeys(ctx context.Context, ex *sqlenv.Executor, dbPath string) (spidersql.Schema, spidersql.KeyMap, error) {
	res, err := ex.Execute(ctx, dbPath, keysQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("read schema and foreign keys of %s: %w", dbPath, err)
	}
	// The columns' rows come first: UNION ALL returns its operands' rows
	// in turn, each in its own order.
	n, rows := 0, make([][]sqlenv.Cell, len(res.Rows))
	for n < len(res.Rows) && res.Rows[n][0].Int == 0 {
		rows[n] = res.Rows[n][1:4]
		n++
	}
	cols, fks := columnRows(rows[:n]), res.Rows[n:]
	var tables []string
	columns := make([]spidersql.Column, 1, len(cols)+1)
	columns[0] = spidersql.Column{Table: -1, Name: "*"}
	index := map[[2]string]int{{"", "*"}: 0}
	firstPK := map[string]string{}
	for _, c := range cols {
		if len(tables) == 0 || tables[len(tables)-1] != c.table {
			tables = append(tables, c.table)
		}
		index[[2]string{c.table, c.name}] = len(columns)
		columns = append(columns, spidersql.Column{Table: len(tables) - 1, Name: c.name})
		if _, ok := firstPK[c.table]; !ok && c.pk {
			firstPK[c.table] = c.name
		}
	}
	var pairs [][2]int
	for _, row := range fks {
		row = row[1:]
		t, ref, from := strings.ToLower(row[0].String()), strings.ToLower(row[1].String()), strings.ToLower(row[2].String())
		to := strings.ToLower(row[3].String())
		if row[3].Kind == sqlenv.KindNull {
			to = firstPK[ref]
		}
		a, okA := index[[2]string{t, from}]
		b, okB := index[[2]string{ref, to}]
		if okA && okB {
			pairs = append(pairs, [2]int{a, b})
		}
	}
	return cols.schema(), spidersql.ForeignKeyMap(tables, columns, pairs), nil
}
