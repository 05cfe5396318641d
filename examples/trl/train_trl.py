"""One training stage of examples/trl with TRL, launched by accelerate:

    accelerate launch train_trl.py sft INIT OUT    # SFTTrainer
    accelerate launch train_trl.py grpo INIT OUT   # GRPOTrainer

SFT reads sft_data/rlgate_sft.json (rlgate export sft --format sharegpt),
each conversation turned into TRL's messages; GRPO reads rl_data/train.jsonl
(rlgate export rl --format jsonl: a conversational "prompt", the gold in
"reward_spec", the database in "db_id") with an execution-match reward on
the stage's db_root. The learning rate, KL coefficient (beta) and db_root
are the stage's params (RLGATE_PARAM_*); lr = 0 is the No-update control.
The model goes to OUT, and trainer_state.json beside it, which the stage
reads as its metrics (FORMAT trl)."""

import collections
import json
import os
import re
import sqlite3
import sys

from datasets import Dataset, load_dataset
from trl import GRPOConfig, GRPOTrainer, SFTConfig, SFTTrainer

ROLES = {"system": "system", "human": "user", "gpt": "assistant", "observation": "user"}


def sft_dataset():
    with open("sft_data/rlgate_sft.json") as f:
        rows = json.load(f)
    return Dataset.from_list([{"messages": [{"role": ROLES[m["from"]], "content": m["value"]} for m in r["conversations"]]} for r in rows])


def _rows(db, sql):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return collections.Counter(con.execute(sql).fetchall())
    finally:
        con.close()


def execution_match(completions, reward_spec, db_id, **kwargs):
    """1 when the last <solution> SQL returns the gold's rows (a multiset)."""
    root = os.environ["RLGATE_PARAM_DB_ROOT"]
    out = []
    for completion, spec, db in zip(completions, reward_spec, db_id):
        found = re.findall(r"<solution>(.*?)</solution>", completion[0]["content"], re.S)
        path = os.path.join(root, db, db + ".sqlite")
        try:
            out.append(float(bool(found) and _rows(path, found[-1]) == _rows(path, spec["ground_truth"])))
        except Exception:
            out.append(0.0)
    return out


def main(mode, init, out):
    lr = float(os.environ["RLGATE_PARAM_LR"])
    common = dict(output_dir=out, learning_rate=lr, logging_steps=1, save_strategy="no", bf16=True, report_to="none")
    if mode == "sft":
        args = SFTConfig(num_train_epochs=2, per_device_train_batch_size=1, gradient_accumulation_steps=16, **common)
        trainer = SFTTrainer(model=init, args=args, train_dataset=sft_dataset())
    else:
        args = GRPOConfig(num_generations=8, beta=float(os.environ["RLGATE_PARAM_KL_COEF"]), epsilon=0.2, epsilon_high=0.28,
                          max_completion_length=2048, use_vllm=True, per_device_train_batch_size=8, **common)
        data = load_dataset("json", data_files="rl_data/train.jsonl", split="train")
        trainer = GRPOTrainer(model=init, reward_funcs=execution_match, args=args, train_dataset=data)
    trainer.train()
    trainer.save_model(out)
    trainer.save_state()  # trainer_state.json: every logged step


if __name__ == "__main__":
    main(*sys.argv[1:4])
