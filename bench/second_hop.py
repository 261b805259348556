#!/usr/bin/env python3
"""A second hop by the words of the first hits (issue #51; docs/search.md, "A second hop by the first hits' words,
tried and not kept"): relevance-model expansion (RM3-like) over LoCoMo dev. The n words most particular to ghola's
top k hits (each word's share of a hit × the conversation's idf × the hit's score; none of the question's words,
no function word) make a second keyword query; its BM25 over every turn of the conversation, divided by its best,
is added × w to ghola's score ÷ its best (a turn outside ghola's top hundred starts under its hundredth). Prints
R@5 / R@10 per category (single-hop, multi-hop, temporal, open-domain) and R@10 per conversation (the folds).

    /tmp/benchvenv/bin/python bench/second_hop.py [--work /tmp/locomo-recall]

--work is where `bench/locomo_recall.py` copied the corpus and built its index (run that first).
"""
import json, math, sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_runs import arguments, top_hits  # noqa: E402
from plain_fusion import bm25, words  # noqa: E402

a = arguments().parse_args()

# src/index/lexical.rs FUNCTION_WORDS, plus contractions' tails and LoCoMo's image caption words
FUNCTION = set("""a about above after again all also am an and any are as at be because been before being below
between both but by can could did do does doing done down during each either else ever few for from further had has
have having he her here hers him his how i if in into is it its itself just let lets may me might more most must my
myself no nor not now of off on once only or other our ours out over own same shall she should so some such than
that the their theirs them then there these they this those through to too under until up us very was we were what
when where which while who whom whose why will with would yes yet you your yours s t m ll re ve d image photo""".split())

work = Path(a.work)
messages = [json.loads(line) for line in open(work / "corpus/messages.jsonl")]
questions = json.load(open(work / "corpus/gold.json"))
turns = defaultdict(list)
for m in messages:
    turns[m["cwd"]].append(m)
docs = {c: [Counter(words(m["text"])) for m in ms] for c, ms in turns.items()}
position = {c: {m["uuid"]: i for i, m in enumerate(ms)} for c, ms in turns.items()}
df = {c: Counter(w for d in ds for w in d) for c, ds in docs.items()}
ranked = [[(h["matched_message"]["uuid"], h["score"]) for h in hits] for hits in top_hits(a, questions, 100)]


def second_hop(q, hits, k, n, w):
    """The top ten after adding w × the expansion query's BM25 to ghola's scores."""
    if w == 0 or not hits:
        return [u for u, _ in hits][:10]
    c = q["cwd"]
    asked = set(words(q["question"]))
    best = hits[0][1] or 1.0
    weight = Counter()
    for uuid, score in hits[:k]:
        d = docs[c][position[c][uuid]]
        length = sum(d.values()) or 1
        for t, f in d.items():
            if t not in FUNCTION and t not in asked and len(t) > 2 and not t.isdigit():
                weight[t] += score / best * f / length * math.log(len(docs[c]) / df[c][t])
    lexical = bm25(docs[c], [t for t, _ in weight.most_common(n)])
    score = np.full(len(docs[c]), 0.9 * hits[-1][1] / best)
    for uuid, s in hits:
        score[position[c][uuid]] = s / best
    score += w * lexical / (lexical.max() or 1.0)
    return [turns[c][j]["uuid"] for j in np.argsort(-score, kind="stable")[:10]]


conversations = sorted({q["conversation"] for q in questions})
print("k, n, w        single-hop  multi-hop   temporal    open-domain  (R@5/R@10)   R@10 per conversation")
for k, n, w in [(0, 0, 0), (1, 5, 0.1), (3, 5, 0.1), (3, 5, 0.2), (3, 5, 0.3), (3, 10, 0.1), (3, 10, 0.2),
                (5, 10, 0.1), (5, 10, 0.2)]:
    recall = defaultdict(list)
    for q, hits in zip(questions, ranked):
        top, gold = second_hop(q, hits, k, n, w), set(q["gold_uuids"])
        r = (len(gold & set(top[:5])) / len(gold), len(gold & set(top)) / len(gold))
        recall[q["category"]].append(r)
        recall[q["conversation"]].append(r)
    pct = lambda rs, j: 100 * sum(r[j] for r in rs) / len(rs)
    print(f"{'now' if w == 0 else f'{k}, {n}, {w}':<14}"
          + "  ".join(f"{pct(recall[c], 0):5.1f}/{pct(recall[c], 1):<5.1f}" for c in (4, 1, 2, 3))
          + "   " + " ".join(f"{pct(recall[c], 1):.1f}" for c in conversations))
