package sqlenv

import (
	"strings"

	sqlite3 "modernc.org/sqlite/lib"
)

// readPragmas are the PRAGMAs a query may run. Each only reports on the
// schema (a policy exploring tables commonly asks for table_info) and none
// takes a value that changes state, so the argument is not inspected.
var readPragmas = map[string]bool{
	"table_info":       true,
	"table_xinfo":      true,
	"index_list":       true,
	"index_info":       true,
	"index_xinfo":      true,
	"foreign_key_list": true,
}

// deniedFunctions are SQL functions no query may call: load_extension runs
// native code from a file, fts3_tokenizer can install a native pointer.
// Functions that allocate (randomblob, zeroblob, printf, replace,
// group_concat) stay allowed; SQLITE_LIMIT_LENGTH bounds what they build.
var deniedFunctions = map[string]bool{
	"load_extension": true,
	"fts3_tokenizer": true,
}

// Allowed is the authorizer's allow-list, consulted by SQLite for every
// action while a statement is compiled. It allows reading (SELECT, READ,
// RECURSIVE for WITH RECURSIVE), calling functions except deniedFunctions,
// and the schema-reporting PRAGMAs in readPragmas; it denies everything
// else: INSERT/UPDATE/DELETE, every CREATE/DROP/ALTER, ATTACH/DETACH,
// transactions and savepoints, ANALYZE, REINDEX, other PRAGMAs (writes and
// reads alike, such as database_list, which would reveal host paths).
//
// VACUUM has no authorizer action; it is refused because it is not
// read-only (ErrNotReadOnly), like any statement that slips past this list.
func Allowed(action int32, arg1, arg2 string) bool {
	switch action {
	case sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE:
		return true
	case sqlite3.SQLITE_FUNCTION:
		return !deniedFunctions[strings.ToLower(arg2)]
	case sqlite3.SQLITE_PRAGMA:
		return readPragmas[strings.ToLower(arg1)]
	}
	return false
}
