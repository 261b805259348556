#!/usr/bin/env python3
"""LoCoMo's own measure on the dev half: R@5 and R@10 per category — the share of a question's gold turns found
in the top k (Maharana et al. 2024, Table 3) — for ghola, for the floor every ranking change must clear (plain
reciprocal-rank fusion, k = 60, of BM25 and MiniLM cosine over single transcript entries), and the paper's DRAGON
figures; then the same per conversation (the folds: a new history, not a new question).

    python3 bench/locomo_recall.py [--ghola target/release/ghola] [--model-dir models/all-MiniLM-L6-v2]
        [--corpus ../shared/bench/locomo-dev] [--work /tmp/locomo-recall] [--json OUT] [-- EXTRA SEARCH ARGS]

Needs numpy (`python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install numpy`). The corpus is copied
under --work (the index goes there, never under ../shared); the baseline's vectors come from `ghola embed` (the
same MiniLM, f32) and are kept in --work.
"""
import argparse, json, shutil, subprocess, sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plain_fusion import bm25, embedded, fused_order, words  # noqa: E402

here = Path(__file__).resolve().parent
root = here.parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--corpus", default=str(root.parent / "shared/bench/locomo-dev"))
ap.add_argument("--work", default="/tmp/locomo-recall")
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--json", help="write per-question ranks here")
ap.add_argument("extra", nargs=argparse.REMAINDER)
a = ap.parse_args()
extra = [x for x in a.extra if x != "--"]

CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}
DRAGON_R5 = {"single-hop": 68.0, "multi-hop": 35.4, "temporal": 70.4, "open-domain": 33.1}

work = Path(a.work)
corpus = work / "corpus"
if not corpus.is_dir():
    work.mkdir(parents=True, exist_ok=True)
    shutil.copytree(a.corpus, corpus)
questions = json.load(open(corpus / "gold.json"))
messages = [json.loads(l) for l in open(corpus / "messages.jsonl")]
ghola = [a.ghola, "--claude-dir", str(corpus / ".claude"), "--index-dir", str(work / "index"),
         "--model-dir", a.model_dir]

# ghola: its index, then one search per question (project scope, no context: the ranking itself).
r = subprocess.run(ghola + ["index"], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"ghola index failed: {r.stderr}")


def ghola_ranked(q):
    cmd = ghola + ["search", q["question"], "--project", q["cwd"], "--context", "0", "--limit", "10",
                   "--json", "--no-update", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        # A failed search is not an empty answer: scoring it as one would report ghola at 0.
        raise SystemExit(f"ghola search failed for {q['qid']}: {r.stderr.strip()}")
    return [h["matched_message"]["uuid"] for h in json.loads(r.stdout).get("results", [])]


with ThreadPoolExecutor(a.jobs) as pool:
    ghola_ranks = list(pool.map(ghola_ranked, questions))

# The floor: BM25 (k1 1.2, b 0.75, lowercased words) and MiniLM cosine over single entries, per conversation,
# fused by reciprocal rank (k = 60).
texts = [m["text"] for m in messages] + [q["question"] for q in questions]
vecs = embedded(a.ghola, a.model_dir, texts, work)
mvec, qvec = vecs[: len(messages)], vecs[len(messages):]
by_conv = defaultdict(list)
for i, m in enumerate(messages):
    by_conv[m["cwd"]].append(i)
docs = {cwd: [Counter(words(messages[i]["text"])) for i in idx] for cwd, idx in by_conv.items()}


def floor_ranked(qi, q):
    idx = by_conv[q["cwd"]]
    order = fused_order(bm25(docs[q["cwd"]], words(q["question"])), mvec[idx] @ qvec[qi])
    return [messages[idx[j]]["uuid"] for j in order[:10]]


floor_ranks = [floor_ranked(i, q) for i, q in enumerate(questions)]


def recall(ranked, gold, k):
    return len(set(ranked[:k]) & gold) / len(gold)


def table(group):
    rows = defaultdict(lambda: defaultdict(list))
    for q, g, f in zip(questions, ghola_ranks, floor_ranks):
        gold = set(q["gold_uuids"])
        for key in (group(q), "all"):
            for name, ranked in (("ghola", g), ("floor", f)):
                rows[key][name + "5"].append(recall(ranked, gold, 5))
                rows[key][name + "10"].append(recall(ranked, gold, 10))
                rows[key][name + "any10"].append(float(bool(gold & set(ranked[:10]))))
    return rows


pct = lambda xs: 100 * sum(xs) / len(xs)
print(f"LoCoMo dev half ({len(questions)} questions), project scope, --context 0 {' '.join(extra)}")
print(f"{'category':<12} {'n':>4}  {'ghola R@5':>9} {'R@10':>6}  {'floor R@5':>9} {'R@10':>6}  {'DRAGON R@5':>10}")
cat = table(lambda q: CATEGORIES[q["category"]])
for name in list(CATEGORIES.values()) + ["all"]:
    r = cat[name]
    print(f"{name:<12} {len(r['ghola5']):>4}  {pct(r['ghola5']):>9.1f} {pct(r['ghola10']):>6.1f}  "
          f"{pct(r['floor5']):>9.1f} {pct(r['floor10']):>6.1f}  {DRAGON_R5.get(name, float('nan')):>10.1f}")
print()
print("per conversation (R@10; any@10):")
conv = table(lambda q: q["conversation"])
for name in sorted(k for k in conv if k != "all"):
    r = conv[name]
    print(f"{name:<12} {len(r['ghola10']):>4}  ghola {pct(r['ghola10']):5.1f} ({pct(r['gholaany10']):5.1f})   "
          f"floor {pct(r['floor10']):5.1f} ({pct(r['floorany10']):5.1f})   "
          f"difference {pct(r['ghola10']) - pct(r['floor10']):+5.1f}")
if a.json:
    json.dump([{"qid": q["qid"], "ghola": g, "floor": f} for q, g, f in zip(questions, ghola_ranks, floor_ranks)],
              open(a.json, "w"))
