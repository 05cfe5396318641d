#!/usr/bin/env python3
"""A tiny causal language model over a few SQL strings, trained on the CPU.

It exists so rlgate can wrap a real PyTorch trainer in tests: it saves its
weights as bf16 safetensors the way Hugging Face models are saved
(model.safetensors + config.json) and writes veRL-style JSONL metrics
({"step": N, "data": {...}}). With --lr 0 it is the No-update control: the
optimizer runs, and the saved weights must be bit-identical to the initial
ones.

    python3 train.py --init-only --seed 0 --out base/
    python3 train.py --init base/ --lr 1e-2 --steps 20 --out trained/ --metrics m.jsonl
"""
import argparse
import json
import os
import struct

import torch

SQL = [
    "SELECT count(*) FROM singer",
    "SELECT name, country FROM singer ORDER BY age DESC",
    "SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'France'",
    "SELECT song_name FROM singer WHERE age > (SELECT avg(age) FROM singer)",
    "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id",
    "SELECT name FROM stadium WHERE capacity > 5000",
    "SELECT DISTINCT country FROM singer WHERE age > 20",
    "SELECT count(*) FROM concert WHERE year = 2014 OR year = 2015",
]
CONTEXT = 4


class TinyLM(torch.nn.Module):
    """Predicts the next character from the previous CONTEXT characters."""

    def __init__(self, vocab, dim=32, hidden=64):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.hidden = torch.nn.Linear(CONTEXT * dim, hidden)
        self.out = torch.nn.Linear(hidden, vocab)

    def forward(self, ctx):
        h = self.embed(ctx).flatten(1)
        return self.out(torch.tanh(self.hidden(h)))


def vocabulary():
    return ["<pad>"] + sorted(set("".join(SQL)))


def examples(vocab):
    index = {c: i for i, c in enumerate(vocab)}
    xs, ys = [], []
    for s in SQL:
        ids = [0] * CONTEXT + [index[c] for c in s]
        for i in range(CONTEXT, len(ids)):
            xs.append(ids[i - CONTEXT:i])
            ys.append(ids[i])
    return torch.tensor(xs), torch.tensor(ys)


def save_safetensors(model, path):
    """Writes every parameter as BF16, names sorted, header padded to 8 bytes."""
    header, blobs, offset = {}, [], 0
    for name, t in sorted(model.state_dict().items()):
        data = t.detach().to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


def load_safetensors(model, path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    state = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        raw = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.int16)
        state[name] = raw.view(torch.bfloat16).reshape(meta["shape"]).to(torch.float32)
    model.load_state_dict(state)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="checkpoint directory to write")
    p.add_argument("--init", help="checkpoint directory to start from (default: a fresh model from --seed)")
    p.add_argument("--init-only", action="store_true", help="save the initial model and stop")
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--metrics", help="veRL-style JSONL metrics file to append to")
    args = p.parse_args()

    # Deterministic under its seed, so rlgate reproduce gives the same
    # weights bit for bit (docs/REPRODUCE.md, "GPU stages"): one seed for
    # everything random, and only deterministic kernels.
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    vocab = vocabulary()
    model = TinyLM(len(vocab))
    if args.init:
        load_safetensors(model, os.path.join(args.init, "model.safetensors"))
    os.makedirs(args.out, exist_ok=True)
    if not args.init_only:
        xs, ys = examples(vocab)
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        metrics = open(args.metrics, "a") if args.metrics else None
        for step in range(1, args.steps + 1):
            loss = torch.nn.functional.cross_entropy(model(xs), ys)
            opt.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            print(f"step:{step} - train/loss:{loss.item():.4f} - actor/lr:{args.lr}", flush=True)
            if metrics:
                record = {"step": step, "data": {"train/loss": loss.item(), "actor/lr": args.lr,
                                                 "actor/grad_norm": grad_norm.item(), "training/global_step": step}}
                metrics.write(json.dumps(record) + "\n")
                metrics.flush()
        if metrics:
            metrics.close()
    save_safetensors(model, os.path.join(args.out, "model.safetensors"))
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump({"architectures": ["TinyLM"], "vocab_size": len(vocab), "context": CONTEXT,
                   "hidden_size": 64, "torch_dtype": "bfloat16"}, f, indent=2)


if __name__ == "__main__":
    main()
