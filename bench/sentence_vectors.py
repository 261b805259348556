#!/usr/bin/env python3
"""A short turn's sentences as vectors of their own, by cosine alone (issue #51; docs/search.md, "A short
message's sentences as vectors of their own, tried and not kept"): LoCoMo dev R@5 / R@10 per category when a
turn is scored by its vector as ghola builds it (its text plus 1.5 × the previous turn's last 300 characters,
renormalised), and by the best of that and of each of its sentences' vectors (alone, or plus w × the same
neighbour). No keyword score and no rule: what the unit adds to the semantic half before any fusion.

    /tmp/benchvenv/bin/python bench/sentence_vectors.py [--ghola target/release/ghola]
        [--model-dir models/all-MiniLM-L6-v2] [--work /tmp/locomo-recall]

--work is where `bench/locomo_recall.py` copied the corpus (its `corpus/`); vectors are cached there.
"""
import json, re, sys
from collections import defaultdict
from pathlib import Path

import numpy as np

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
from locomo_runs import arguments  # noqa: E402
from plain_fusion import embedded  # noqa: E402

a = arguments().parse_args()

corpus = Path(a.work) / "corpus"
questions = json.load(open(corpus / "gold.json"))
turns = [json.loads(l) for l in open(corpus / "messages.jsonl")]
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}


def sentences(t):
    """A turn's sentences of three words or more (an image's caption is one); one or none: the turn alone."""
    parts = [p for p in re.split(r"(?<=[.!?])\s+|\s*(?=\[image:)", t) if len(p.split()) >= 3]
    return parts if len(parts) > 1 else []


previous, sents, owner = [], [], []
for i, t in enumerate(turns):
    same = i > 0 and turns[i - 1]["session_id"] == t["session_id"]
    previous.append(turns[i - 1]["text"][-300:] if same else "")
    for s in sentences(t["text"]):
        sents.append(s)
        owner.append(i)
owner = np.array(owner)


def unit(v):
    return v / np.linalg.norm(v, axis=1, keepdims=True)


own = embedded(a.ghola, a.model_dir, [t["text"] for t in turns], a.work)
before = embedded(a.ghola, a.model_dir, [p or "." for p in previous], a.work)
has = np.array([1.0 if p else 0.0 for p in previous])[:, None]
asked = embedded(a.ghola, a.model_dir, [q["question"] for q in questions], a.work)
sent = embedded(a.ghola, a.model_dir, sents, a.work)
turn_vec = unit(own + 1.5 * has * before)
sent_vecs = {w: unit(sent + w * has[owner] * before[owner]) for w in (0.0, 0.5, 1.5)}
print(f"{len(turns)} turns, {len(sents)} sentences of {len(set(owner.tolist()))} turns with more than one")

by_conv = defaultdict(list)
for i, t in enumerate(turns):
    by_conv[t["cwd"]].append(i)
at = {t["uuid"]: i for i, t in enumerate(turns)}
recall = defaultdict(lambda: defaultdict(list))
for qi, q in enumerate(questions):
    ids = np.array(by_conv[q["cwd"]])
    whole = turn_vec[ids] @ asked[qi]
    variants = {"the turn (ghola's vector)": whole}
    for w, sv in sent_vecs.items():
        best = np.full(len(turns), -1.0)
        np.maximum.at(best, owner, sv @ asked[qi])
        variants[f"+ sentences, neighbour {w}"] = np.maximum(whole, best[ids])
    gold = {at[u] for u in q["gold_uuids"] if u in at}
    for name, score in variants.items():
        order = ids[np.argsort(-score)]
        recall[name][CATEGORIES[q["category"]]].append(
            (len(gold & set(order[:5].tolist())) / max(1, len(gold)),
             len(gold & set(order[:10].tolist())) / max(1, len(gold))))

print(f"{'cosine alone, R@5 / R@10':30}" + "".join(f"{c:>14}" for c in CATEGORIES.values()))
for name, cats in recall.items():
    print(f"{name:30}" + "".join(
        f"{100 * np.mean([r5 for r5, _ in cats[c]]):>7.1f}/{100 * np.mean([r10 for _, r10 in cats[c]]):<6.1f}"
        for c in CATEGORIES.values()))
