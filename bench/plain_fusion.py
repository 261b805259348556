"""The floor every ranking change must clear (issue #47), written once for the LoCoMo and coding scripts: BM25
(k1 1.2, b 0.75, lowercased words) and reciprocal-rank fusion (k = 60) of it with MiniLM cosine, the best 100 of
each list fused; and the MiniLM vectors they use, from `ghola embed`."""
import hashlib
import json
import math
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np


def embedded(ghola, model_dir, texts, work):
    """Unit vectors of `texts` from `ghola embed` (the same MiniLM, f32), kept in `work` under a hash of the
    texts, so a script run again embeds nothing."""
    key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    cache = Path(work) / f"vectors-{key}.npy"
    if cache.exists():
        vecs = np.load(cache)
    else:
        r = subprocess.run([ghola, "--model-dir", model_dir, "embed"],
                           input="".join(json.dumps({"text": t}) + "\n" for t in texts), capture_output=True,
                           text=True)
        if r.returncode != 0:
            sys.exit(f"ghola embed failed: {r.stderr}")
        vecs = np.array([json.loads(l) for l in r.stdout.splitlines()], dtype=np.float32)
        np.save(cache, vecs)
    return vecs / (np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-12)


def words(s):
    return re.findall(r"\w+", s.lower())


def bm25(docs, terms):
    """BM25 of `terms` against each of `docs` (Counters of words), the documents being the whole collection."""
    lens = [sum(d.values()) for d in docs]
    avg = sum(lens) / max(1, len(lens))
    df = Counter(w for d in docs for w in d)
    n = len(docs)
    return np.array([sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * d[t] * 2.2
                         / (d[t] + 1.2 * (1 - 0.75 + 0.75 * l / avg)) for t in terms if t in d)
                     for d, l in zip(docs, lens)])


def fused_order(lex, cos):
    """Document positions by the reciprocal-rank fusion of two score arrays, best first."""
    fused = np.zeros(len(lex))
    for order in (np.argsort(-np.asarray(lex), kind="stable"), np.argsort(-np.asarray(cos), kind="stable")):
        for rank, j in enumerate(order[:100]):
            fused[j] += 1.0 / (60 + rank + 1)
    return np.argsort(-fused, kind="stable")
