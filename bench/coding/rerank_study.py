#!/usr/bin/env python3
"""A learned re-ranking of ghola's top twenty, tried and not kept (issue #47; docs/search.md, "A learned order of
the top twenty"): a linear pairwise model (logistic loss on gold-minus-other feature differences, L2) over what a
hit's JSON says — its fused, semantic and keyword scores relative to the query's best, its rank, role and kind,
its length, whether it opens as thinking, a tool output or error, ends with a question mark, holds a call, or
shares the first hit's session — trained with one corpus folder held out at a time (the folds of
bench/folds.py), then on all of questions.json and scored on the held-out sets.

    /tmp/benchvenv/bin/python bench/coding/rerank_study.py [--ghola target/release/ghola] [--work /tmp/ghola-coding]

Needs numpy and an index per corpus folder under --work (bench/coding/eval.py builds them).
"""
import argparse, json, math, subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

here = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(here.parent.parent / "target/release/ghola"))
ap.add_argument("--corpus", default=str(here.parent.parent.parent / "shared/corpus"))
ap.add_argument("--work", default="/tmp/ghola-coding")
ap.add_argument("--l2", type=float, nargs="*", default=[0.1, 1.0, 10.0])
a = ap.parse_args()


def top20(q):
    cmd = [a.ghola, "--claude-dir", f"{a.corpus}/{q['corpus']}", "--index-dir", f"{a.work}/{q['corpus']}", "search",
           q["question"], "--project=" + q["project"], "--limit", "20", "--json", "--no-update", "--context", "0",
           "--relative-floor", "0"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [{"uuid": x["matched_message"]["uuid"], "sid": x["matched_message"]["session_id"], "score": x["score"],
             "sem": x["scores"]["semantic"], "lex": x["scores"]["lexical"], "role": x["matched_message"]["role"],
             "kind": x["matched_message"]["kind"], "text": x["matched_message"]["content"]}
            for x in json.loads(r.stdout)["results"]]


sets = {}
for name in ("questions", "holdout", "holdout2"):
    qs = json.load(open(here / f"{name}.json"))["questions"]
    with ThreadPoolExecutor(2) as pool:
        sets[name] = list(zip(qs, pool.map(top20, qs)))

KINDS = ["text", "tool_result", "tool_use", "summary", "thinking"]


def features(hits):
    best = max(x["score"] for x in hits)
    best_lex = max(x["lex"] for x in hits) or 1.0
    best_sem = max(x["sem"] for x in hits)
    rows = []
    for r, x in enumerate(hits):
        t = x["text"]
        rows.append([x["score"] / best, x["sem"], x["sem"] - best_sem, x["lex"] / best_lex, 1 / (r + 1),
                     x["role"] == "user", *(x["kind"] == k for k in KINDS), math.log1p(len(t)) / 8,
                     t.startswith("[thinking]"), t.startswith("[tool result]"), t.startswith("[tool error]"),
                     t.rstrip().endswith("?"), x["sid"] == hits[0]["sid"], "[tool]" in t or "[call]" in t])
    return np.array(rows, dtype=float)


def train(data, l2, steps=300):
    diffs = []
    for q, hits in data:
        if not hits:
            continue
        f = features(hits)
        pos = [i for i, x in enumerate(hits) if x["uuid"] in q["gold"]]
        neg = [i for i, x in enumerate(hits) if x["uuid"] not in q["gold"]]
        diffs += [f[p] - f[n] for p in pos for n in neg]
    x = np.array(diffs)
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w)))
        w -= -(x * (1 - p)[:, None]).mean(0) + 10 * l2 * w / len(x)
    return w


def mrr(data, w=None):
    total = 0.0
    for q, hits in data:
        order = list(range(len(hits))) if w is None or not hits else list(np.argsort(-(features(hits) @ w), kind="stable"))
        total += next((1 / (k + 1) for k, i in enumerate(order[:10]) if hits[i]["uuid"] in q["gold"]), 0.0)
    return total / len(data)


tuned = sets["questions"]
folders = sorted({q["corpus"] for q, _ in tuned})
for l2 in a.l2:
    row = []
    for f in folders:
        w = train([x for x in tuned if x[0]["corpus"] != f], l2)
        held = [x for x in tuned if x[0]["corpus"] == f]
        row.append((f, mrr(held), mrr(held, w)))
    print(f"L2 {l2}: mean of held-out folds, ghola {np.mean([r[1] for r in row]):.3f} / learned "
          f"{np.mean([r[2] for r in row]):.3f}   " + "  ".join(f"{f[:8]} {b:.3f}→{n:.3f}" for f, b, n in row))
    w = train(tuned, l2)
    for name in ("holdout", "holdout2"):
        print(f"   {name}: ghola {mrr(sets[name]):.3f} / learned on all 150 {mrr(sets[name], w):.3f}")
