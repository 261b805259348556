"""The floor every ranking change must clear (issue #47), written once for the LoCoMo and coding scripts: BM25
(k1 1.2, b 0.75, lowercased words) and reciprocal-rank fusion (k = 60) of it with MiniLM cosine, the best 100 of
each list fused."""
import math
import re
from collections import Counter

import numpy as np


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
