# Regenerates sums.json: every query of the shipped golds and predictions
# (BIRD mini-dev on its 3 databases, GPT-4 and Mixtral predictions; Spider
# dev gold and DAIL-SQL predictions) that calls SUM, AVG or TOTAL, runs
# without error, returns a float and at most 50 rows, with its result
# under Python's sqlite3 on SQLite 3.40.1 (Debian 12), the library the
# official verdicts were computed with. Floats are float.hex(), exact.
# Run from the repository root: python3 testdata/sqlite-3.40/gen_sums.py
import json, os, re, sqlite3

assert sqlite3.sqlite_version == "3.40.1", sqlite3.sqlite_version
BIRD = ("superhero", "toxicology", "student_club")
qs = []
for x in json.load(open("testdata/bird/mini_dev_sqlite.json")):
    if x["db_id"] in BIRD:
        qs.append(("bird", x["db_id"], x["SQL"]))
for f in ("gpt-4", "mixtral-8x7b"):
    for v in json.load(open(f"testdata/bird/predictions/{f}.json")).values():
        sql, _, db = v.partition("\t----- bird -----\t")
        if db in BIRD:
            qs.append(("bird", db, sql))
golds = [l.rstrip("\n").split("\t") for l in open("testdata/spider/dev_gold.sql")]
preds = [l.rstrip("\n") for l in open("testdata/spider/predictions/dail-sql-gpt4.txt")]
qs += [("spider", db, sql) for sql, db in golds]
qs += [("spider", db, p) for p, (_, db) in zip(preds, golds)]


def enc(v):
    if isinstance(v, float):
        return ["f", v.hex()]
    if isinstance(v, int):
        return ["i", str(v)]
    if v is None:
        return ["n", ""]
    if isinstance(v, bytes):
        return ["b", v.hex()]
    return ["t", v]


out, seen = [], set()
for kind, db, sql in qs:
    if not re.search(r"\b(sum|avg|total)\s*\(", sql, re.I) or (db, sql) in seen:
        continue
    seen.add((db, sql))
    path = f"testdata/{kind}/{'dev_databases' if kind == 'bird' else 'database'}/{db}/{db}.sqlite"
    if not os.path.exists(path):
        continue
    try:
        rows = sqlite3.connect(path).execute(sql).fetchall()
    except Exception:
        continue
    if len(rows) > 50 or not any(isinstance(v, float) for r in rows for v in r):
        continue
    out.append({"db": path, "sql": sql, "rows": [[enc(v) for v in r] for r in rows]})
with open("testdata/sqlite-3.40/sums.json", "w") as f:
    json.dump(out, f, indent=0)
print(len(out), "queries")
