#!/usr/bin/env python3
"""ghola's order fused with its own plain-RRF order (issue #47): both held-out coding sets had the floor first
where ghola was not, so this asks whether a hedge — reciprocal-rank fusion of the default ranking and
`--fusion rrf`'s, at rank constant k and weight w for the RRF list — keeps the depth of the one and the first
place of the other. Scored per fold (corpus folder; LoCoMo conversation) on the indexes `bench/folds.py` built.

    python3 bench/order_fusion.py [--work /tmp/folds] [--out /tmp/order-fusion]

Lists are cached in --out per ghola binary, flags and GHOLA_ environment (bench/cache_key.py).
"""
import argparse, json, statistics, subprocess, sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cache_key import build_key

here = Path(__file__).resolve().parent
root = here.parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--corpus", default=str(root.parent / "shared/corpus"))
ap.add_argument("--locomo", default="/tmp/locomo-recall/corpus", help="a copy of ../shared/bench/locomo-dev")
ap.add_argument("--work", default="/tmp/folds", help="bench/folds.py's --work (its default indexes)")
ap.add_argument("--out", default="/tmp/order-fusion")
a = ap.parse_args()
out = Path(a.out)
out.mkdir(parents=True, exist_ok=True)

questions = []  # (id, set, fold, gold, base command, scope)
for qf, tag in [("questions.json", "coding"), ("holdout.json", "holdout"), ("holdout2.json", "holdout2")]:
    for q in json.load(open(here / "coding" / qf))["questions"]:
        base = [a.ghola, "--claude-dir", f"{a.corpus}/{q['corpus']}", "--index-dir",
                f"{a.work}/index/coding/default/{q['corpus']}", "--model-dir", a.model_dir]
        questions.append((q["id"], tag, q["corpus"], set(q["gold"]), base, "--project=" + q["project"], q["question"]))
for q in json.load(open(Path(a.locomo) / "gold.json")):
    base = [a.ghola, "--claude-dir", f"{a.locomo}/.claude", "--index-dir", f"{a.work}/index/locomo/default",
            "--model-dir", a.model_dir]
    questions.append((q["qid"], "locomo", q["conversation"], set(q["gold_uuids"]), base, "--project=" + q["cwd"],
                      q["question"]))


def lists(name, flags):
    path = out / f"{name}-{build_key(a.ghola, flags)}.json"
    if path.exists():
        return json.load(open(path))

    def run(q):
        qid, _, _, _, base, scope, question = q
        r = subprocess.run(base + ["search", question, scope, "--context", "0", "--limit", "30", "--json",
                                   "--no-update", *flags], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"search failed for {qid}: {r.stderr}")
        return qid, [h["matched_message"]["uuid"] for h in json.loads(r.stdout).get("results", [])]

    with ThreadPoolExecutor(2) as pool:
        got = dict(pool.map(run, questions))
    json.dump(got, open(path, "w"))
    return got


def rr(ranked, gold):
    return next((1 / (i + 1) for i, u in enumerate(ranked[:10]) if u in gold), 0.0)


def report(name, ranked):
    by = defaultdict(lambda: defaultdict(list))
    for qid, tag, fold, gold, *_ in questions:
        by[tag][fold].append(rr(ranked[qid], gold))
    cells = []
    for tag in ("coding", "locomo", "holdout", "holdout2"):
        folds = by[tag]
        cells.append(f"{tag} {statistics.mean(statistics.mean(v) for v in folds.values()):.3f}")
    print(f"{name:<26}" + "   ".join(cells))


def fuse(first, second, k, w):
    fused = {}
    for qid in first:
        score = defaultdict(float)
        for ranked, weight in ((first[qid], 1.0), (second[qid], w)):
            for i, u in enumerate(ranked):
                score[u] += weight / (k + i + 1)
        fused[qid] = sorted(score, key=lambda u: -score[u])
    return fused


default, rrf = lists("default", []), lists("rrf", ["--fusion", "rrf"])
print("MRR@10, mean of folds (coding: corpus folders; locomo: conversations; the held-out sets: one fold each)")
report("defaults", default)
report("--fusion rrf", rrf)
for k in (1, 5, 10, 60):
    for w in (0.3, 0.5, 1.0):
        report(f"fused, k {k}, w {w}", fuse(default, rrf, k, w))
