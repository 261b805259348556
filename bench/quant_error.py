#!/usr/bin/env python3
"""How far the quantized copies' scores are from the f32 cosine, over real vectors: the error bound behind
`search::scan::INT4_ERROR` (docs/benchmarks.md, "A 4-bit copy scanned first").

    python3 bench/quant_error.py --index DIR [--index DIR ...] [--ghola target/release/ghola]

Reads every `segments/*.vec` of the given index directories (ghola indexes of real histories, e.g. those
`bench/coding/eval.py` builds) and embeds the questions of `bench/coding/*.json` with `ghola embed` as the
queries; quantizes rows and queries as `index::int4` and `index::int8` do and prints each copy's error (standard
deviation, 99.99th percentile, worst) against the exact cosine. Needs numpy (`/tmp/benchvenv/bin/python`).
"""
import argparse, glob, json, subprocess
from pathlib import Path

import numpy as np

root = Path(__file__).resolve().parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--index", action="append", required=True)
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
a = ap.parse_args()


def vectors(path):
    # A framed file: a 24-byte header, then little-endian f32 rows of 384.
    return np.fromfile(path, dtype=np.uint8)[24:].view(np.float32).reshape(-1, 384)


rows = np.concatenate([vectors(f) for d in a.index for f in sorted(glob.glob(f"{d}/segments/*.vec"))])
questions = []
for f in sorted((root / "bench/coding").glob("*.json")):
    try:
        j = json.load(open(f))
    except json.JSONDecodeError:
        continue
    items = j.get("questions", []) if isinstance(j, dict) else j
    questions += [q["question"] for q in items if isinstance(q, dict) and "question" in q]
out = subprocess.run([a.ghola, "--model-dir", a.model_dir, "embed"], capture_output=True, text=True, check=True,
                     input="".join(json.dumps({"text": q}) + "\n" for q in questions)).stdout
queries = np.array([json.loads(line) for line in out.splitlines()], dtype=np.float32)


def quantized(m, levels):
    scale = np.abs(m).max(1, keepdims=True) / levels
    scale[scale == 0] = 1
    return np.clip(np.round(m / scale), -levels, levels) * scale


exact = rows @ queries.T
q8 = quantized(queries, 127)
print(f"{len(rows)} vectors, {len(queries)} questions")
for name, levels in (("int4", 7), ("int8", 127)):
    err = quantized(rows, levels) @ q8.T - exact
    size = np.abs(err)
    print(f"{name}: error sd {err.std():.4f}, |error| p99.99 {np.quantile(size, 0.9999):.4f}, "
          f"worst {size.max():.4f}")
