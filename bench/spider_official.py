"""Grades the DAIL-SQL Spider predictions with the official test-suite
evaluator's eval_exec_match (default flags: plug_value off, DISTINCT
stripped), in one process, on the items whose database exists, and prints
"correct total". It is the reference bench/grade.sh times rlgate against.

    python3 bench/spider_official.py OFFICIAL_DIR testdata/spider

OFFICIAL_DIR is a checkout of taoyds/test-suite-sql-eval (exec_eval.py,
parse.py; needs sqlparse and tqdm). Nothing of it is kept in this repository.
"""
import os
import sys

sys.path.insert(0, sys.argv[1])
from exec_eval import eval_exec_match  # noqa: E402

root = sys.argv[2]
gold = [line.rstrip("\n").split("\t") for line in open(os.path.join(root, "dev_gold.sql"))]
preds = [line.strip() for line in open(os.path.join(root, "predictions/dail-sql-gpt4.txt"))]
correct = total = 0
for (g, db), p in zip(gold, preds):
    path = os.path.join(root, "database", db, db + ".sqlite")
    if not os.path.exists(path):
        continue
    total += 1
    correct += eval_exec_match(path, p, g.strip(), False, False, False)
print(correct, total)
