// Package spidersql parses SQL the way the official Spider evaluator's
// process_sql.py does (taoyds/test-suite-sql-eval), and computes from the
// parse what its evaluation.py computes: the hardness level of a gold
// query (Hardness). It is written from the published rules, not
// translated code, and reproduces their behaviour where it matters for
// agreement, quirks included:
//
//   - Tokenize: single quotes become double quotes, every pair of double
//     quotes (in order) is one string token, an odd count is an error;
//     the rest is split as nltk's word_tokenize splits it (white space;
//     parentheses, brackets, < and >, *, ; @ # $ % &, ? and !, a comma or
//     colon not followed by a digit, a final period are tokens of their
//     own; = - + / are not), lower-cased, and "!", ">" or "<" followed by
//     "=" joined.
//   - Parse: the grammar of process_sql.get_sql, column names resolved
//     against the schema (table -> lower-cased column names) through the
//     aliases every "x AS y" in the query declares. What it cannot parse
//     is an error, never a panic: an unknown table or column, a column
//     alias equal to a table name, a JOIN that is not plain JOIN (INNER,
//     LEFT), an operator it does not know. Tokens after a complete query
//     are ignored, as there; a LIMIT's value is always 1.
//
// Hardness is evaluation.py's eval_hardness over the parse: easy,
// medium, hard or extra, from the counts of components (WHERE, GROUP BY,
// ORDER BY, LIMIT, each extra FROM table, OR, LIKE), of nested queries
// (IN/=/... subqueries, INTERSECT, UNION, EXCEPT) and of "others"; the
// count of aggregates counts, as there, a WHERE condition with NOT and
// every AND/OR of HAVING.
//
// ExactMatch is evaluation.py's exact set match with its default flags
// (values and DISTINCT disabled): the prediction (its first tab-separated
// field, "value" replaced by "1") and the gold are parsed, values dropped
// from their conditions, the columns of their FROM tables unified through
// the foreign keys (KeyMap) and DISTINCT erased, then compared clause by
// clause as eval_partial_match does, the FROM tables as sorted lists. A
// prediction that does not parse is compared as an empty query, so it
// scores 0; ExactMatch returns why it did not parse.
package spidersql
