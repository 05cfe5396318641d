"""Execution-match reward for veRL's custom_reward_function: 1 when the
SQL in the response's last <solution>...</solution> returns the same rows
(as a multiset) as the gold on the task's database, else 0. The database
root is the stage's db_root param (RLGATE_PARAM_DB_ROOT), the same root
rlgate run's pre-flight checks."""

import collections
import os
import re
import sqlite3

ROOT = os.environ.get("RLGATE_PARAM_DB_ROOT", "")


def _rows(db, sql):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return collections.Counter(con.execute(sql).fetchall())
    finally:
        con.close()


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    found = re.findall(r"<solution>(.*?)</solution>", solution_str, re.S)
    if not found:
        return 0.0
    db_id = (extra_info or {}).get("db_id", "")
    db = os.path.join(ROOT, db_id, db_id + ".sqlite")
    try:
        return float(_rows(db, found[-1]) == _rows(db, ground_truth))
    except Exception:
        return 0.0
