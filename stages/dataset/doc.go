// Package dataset imports benchmarks (Spider, BIRD, SkyRL parquet, and the
// Spider variants Spider-DK, Spider-Realistic and Spider-Syn) into
// two files kept apart: tasks.jsonl, the public side a policy may see (id,
// position in the source file, db_id, question, evidence and a schema
// rendered from the database), and gold.jsonl (id, db_id, SQL,
// difficulty), with both digests and the source and database digests in
// manifest.json; a Spider-format import also records what exact match
// reads of each database in spider_schemas.json. Questions whose database is missing are skipped and
// listed, not fatal; every task keeps its position in the source file so
// predictions aligned by position still find it.
//
// Every input is checked before anything is written: a source that is
// truncated, of the wrong shape, not clean UTF-8 or holding a NUL byte, a
// gold file out of line with the questions, or a tables.json without a
// question's database is an error naming the file and line or item. An
// import never writes into a directory that holds anything unless forced
// (CheckOut), and then replaces only its own files.
package dataset
