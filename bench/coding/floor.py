#!/usr/bin/env python3
"""The floor every ranking change must clear on the coding set (issue #47): plain reciprocal-rank fusion (k = 60)
of BM25 (k1 1.2, b 0.75, lowercased words) and MiniLM cosine over single transcript entries — one document per
`user`/`assistant` line, its text blocks, tool calls (name and input) and tool results — in the question's
project, beside ghola's ranks from `bench/coding/eval.py --json`, per corpus folder (the folds: a history nobody
tuned for is a new project, not a new question).

    python3 bench/coding/eval.py --json /tmp/coding-ghola.json -- --context 0
    python3 bench/coding/floor.py --ghola-ranks /tmp/coding-ghola.json [--scope global] [--corpus ../shared/corpus] [--work DIR]

An entry found is scored as the message ghola makes of it (the split entries of one assistant reply are one
message, named by its first entry's uuid), so both rank the same gold; a message found counts when any of its
entries is gold, as in eval.py. Needs numpy; vectors come from
`ghola embed` (the same MiniLM) and are kept in --work.
"""
import argparse, json, sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from plain_fusion import bm25, embedded, fused_order, words  # noqa: E402
from entries import entry_text  # noqa: E402

here = Path(__file__).resolve().parent
root = here.parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--questions", default=str(here / "questions.json"), help="the question set (questions.json, or holdout.json: written once over sessions no question had used, never tuned on)")
ap.add_argument("--corpus", default=str(root.parent / "shared/corpus"))
ap.add_argument("--work", default="/tmp/coding-floor")
ap.add_argument("--ghola-ranks", required=True, help="eval.py --json output")
ap.add_argument("--scope", choices=["project", "global"], default="project",
                help="global: every entry of the question's corpus folder, as `eval.py --scope global` searches")
ap.add_argument("--out", help="write the floor's rank of each question here ({id: rank or null})")
a = ap.parse_args()
questions = json.load(open(a.questions))["questions"]
ghola_rank = {r["id"]: r["rank"] for r in json.load(open(a.ghola_ranks))}


entries = []  # (folder, cwd, message uuid, text)
pieces = defaultdict(set)  # message uuid -> the uuids of its entries (a reply written in pieces has several)
for folder in sorted({q["corpus"] for q in questions}):
    for f in sorted(Path(a.corpus, folder, "projects").rglob("*.jsonl")):
        first_of = {}
        for line in open(f, errors="replace"):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if not isinstance(e, dict) or e.get("type") not in ("user", "assistant") or e.get("isMeta"):
                continue
            text = entry_text(e).strip()
            if not text or not e.get("uuid"):
                continue
            mid = (e.get("message") or {}).get("id")
            uuid = first_of.setdefault(mid, e["uuid"]) if e["type"] == "assistant" and mid else e["uuid"]
            entries.append((folder, e.get("cwd") or "", uuid, text[:4000]))
            pieces[uuid].add(e["uuid"])

work = Path(a.work)
work.mkdir(parents=True, exist_ok=True)
texts = [t for *_, t in entries] + [q["question"] for q in questions]
vecs = embedded(a.ghola, a.model_dir, texts, work)
evec, qvec = vecs[: len(entries)], vecs[len(entries):]
tokens = [Counter(words(t)) for *_, t in entries]


def within(cwd, project):
    return cwd == project or cwd.startswith(project.rstrip("/") + "/")


def floor_rank(qi, q):
    idx = [i for i, (f, cwd, _, _) in enumerate(entries) if f == q["corpus"] and (a.scope == "global" or within(cwd, q["project"]))]
    order = fused_order(bm25([tokens[i] for i in idx], words(q["question"])), evec[idx] @ qvec[qi])
    ranked = []
    for j in order:
        u = entries[idx[j]][2]
        if u not in ranked:
            ranked.append(u)
        if len(ranked) == 10:
            break
    gold = set(q["gold"])
    return next((i + 1 for i, u in enumerate(ranked) if (pieces[u] | {u}) & gold), None)


floor = {q["id"]: floor_rank(i, q) for i, q in enumerate(questions)}
if a.out:
    json.dump(floor, open(a.out, "w"))


def scores(ranks):
    n = len(ranks)
    return (sum(r == 1 for r in ranks) / n, sum(r is not None and r <= 10 for r in ranks) / n,
            sum(1 / r for r in ranks if r) / n)


print(f"coding set ({len(questions)} questions), {a.scope} scope; {len(entries)} entries")
print(f"{'fold (corpus folder)':<32} {'n':>3}  {'ghola any@1 any@10 MRR@10':>27}  {'floor any@1 any@10 MRR@10':>27}  diff MRR")
folds = defaultdict(list)
for q in questions:
    folds[q["corpus"]].append(q["id"])
for name in sorted(folds) + ["all"]:
    ids = folds[name] if name != "all" else [q["id"] for q in questions]
    g, f = scores([ghola_rank[i] for i in ids]), scores([floor[i] for i in ids])
    print(f"{name:<32} {len(ids):>3}  {g[0]:>11.3f} {g[1]:>6.3f} {g[2]:>7.3f}  {f[0]:>11.3f} {f[1]:>6.3f} {f[2]:>7.3f}  "
          f"{g[2] - f[2]:+.3f}")
by_slice = defaultdict(list)
for q in questions:
    by_slice[q["slice"]].append(q["id"])
print("\nby kind of question (MRR@10 ghola / floor):")
for s, ids in sorted(by_slice.items()):
    print(f"  {s:<18} {len(ids):>3}  {scores([ghola_rank[i] for i in ids])[2]:.3f} / {scores([floor[i] for i in ids])[2]:.3f}")
