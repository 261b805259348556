#!/usr/bin/env python3
"""Word pieces matched one by one (MaxSim, as late-interaction retrievers score), as a re-ranking of ghola's top
forty (issues #47 and #51; docs/search.md, "Each word of the question matched in the hit, tried and not kept").

A bi-encoder's pooled vector averages a message into one point; a line that answers and a recap of the session
sit equally close. MaxSim asks instead whether each piece of the question has a close piece in the hit: the mean
over the question's word pieces of the best cosine among the hit's, both from MiniLM's last layer (the model
ghola ships; `bench/minilm_tokens.py`). The hit's score becomes (1 − λ)·score/best + λ·maxsim/best maxsim.

    /tmp/benchvenv/bin/python bench/maxsim_study.py DUMP.json [--lambdas 0.1,0.2,0.3] [--cache F.pkl]
    /tmp/benchvenv/bin/python bench/maxsim_study.py --locomo [--work /tmp/locomo-recall] [--lambdas …]

DUMP.json is `bench/coding/harness_factors.py --dump` (the coding sets under the shared harness, gold by line):
prints MRR@10 / any@1 / any@10 for the 150, the held-out questions and each corpus folder (the folds). With
--locomo (and --work, that of `bench/locomo_recall.py`, run first) it asks ghola for each dev question's top forty
and prints R@5 / R@10 per category, then R@10 per conversation (the folds).
"""
import json, pickle, sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_runs import arguments, top_hits  # noqa: E402
from minilm_tokens import MiniLM  # noqa: E402

STOP = set("a an the of to in on for and or is are was were be been did do does we i you it this that what which "
           "how why when where who with at by from as about our my me us".split())
ap = arguments()
ap.add_argument("dump", nargs="?")
ap.add_argument("--locomo", action="store_true", help="LoCoMo dev from --work instead of a coding dump")
ap.add_argument("--lambdas", default="0.1,0.2,0.3,0.5")
ap.add_argument("--cache", default="/tmp/maxsim-cache.pkl")
ap.add_argument("--spread", action="store_true", help="weigh the question's pieces by their spread in the list")
ap.add_argument("--windows", type=int, default=4, help="256-piece windows read per hit")
a = ap.parse_args()
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}


def locomo_rows():
    """Each dev question's top forty, in the coding dump's shape (the folder is the conversation)."""
    text = {}
    for line in open(Path(a.work) / "corpus/messages.jsonl"):
        t = json.loads(line)
        text[t["uuid"]] = t["text"]
    questions = json.load(open(Path(a.work) / "corpus/gold.json"))
    return [{"folder": q["conversation"], "qid": q["qid"], "category": q["category"], "question": q["question"],
             "gold": q["gold_uuids"],
             "hits": [{"uuid": h["matched_message"]["uuid"], "score": h["score"],
                       "text": text.get(h["matched_message"]["uuid"], h["matched_message"].get("content") or "")}
                      for h in hits]}
            for q, hits in zip(questions, top_hits(a, questions, 40))]


rows = locomo_rows() if a.locomo else json.load(open(a.dump))
m = MiniLM(a.model_dir)
cache = pickle.load(open(a.cache, "rb")) if Path(a.cache).exists() else {}


def pieces(text, query=False):
    """Normalised vectors of the text's word pieces, without [CLS]/[SEP] (and, for a question, its stop words)."""
    key = ("q" if query else "d", text)
    if key in cache:
        return cache[key]
    words = text.split()
    out = []
    # a long hit is read in windows of about 180 words, each its own pass (the model reads 256 pieces)
    for w in range(0, max(len(words), 1), 180)[: a.windows]:
        toks, x = m.tokens(" ".join(words[w:w + 180]))
        keep = [i for i, t in enumerate(toks) if t not in ("[CLS]", "[SEP]")
                and not (query and (t in STOP or not any(c.isalnum() for c in t)))]
        if keep:
            out.append(x[keep])
    v = np.concatenate(out) if out else np.zeros((1, 384), np.float32)
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    cache[key] = v
    return v


for i, r in enumerate(rows):
    q = pieces(r["question"], query=True)
    per = [(q @ pieces(h["text"]).T).max(1) for h in r["hits"]]
    # a piece of the question every hit matches alike tells them apart less: weigh each by its spread in the list
    spread = np.std(per, axis=0) + 1e-6 if per else None
    for h, p in zip(r["hits"], per):
        h["maxsim"] = float(p.mean()) if not a.spread else float((p * spread).sum() / spread.sum())
    if i % 20 == 0:
        print(f"{i}/{len(rows)}", file=sys.stderr)
pickle.dump(cache, open(a.cache, "wb"))


def reordered(r, lam):
    if not r["hits"]:
        return []
    best = max(h["score"] for h in r["hits"]) or 1.0
    bm = max(h["maxsim"] for h in r["hits"]) or 1.0
    return sorted(r["hits"], key=lambda h: -((1 - lam) * h["score"] / best + lam * h["maxsim"] / bm))


def scored(rs, lam):
    out = []
    for r in rs:
        order = reordered(r, lam)[:10]
        rank = next((i + 1 for i, h in enumerate(order) if h["uuid"] in r["gold"]), None)
        out.append((1 / rank if rank else 0.0, 1.0 if rank == 1 else 0.0, 1.0 if rank else 0.0))
    return tuple(sum(x[j] for x in out) / max(len(out), 1) for j in range(3))


lambdas = [0.0] + [float(x) for x in a.lambdas.split(",")]
if a.locomo:
    def recall(rs, lam, k):
        return 100 * sum(len(set(h["uuid"] for h in reordered(r, lam)[:k]) & set(r["gold"])) / len(r["gold"])
                         for r in rs) / max(len(rs), 1)
    convs = sorted({r["folder"] for r in rows})
    print(f"R@5 / R@10 per category ({', '.join(CATEGORIES.values())}); then R@10 per conversation ({', '.join(convs)})")
    for lam in lambdas:
        cats = "  ".join(f"{recall([r for r in rows if r['category'] == c], lam, 5):.1f} / "
                         f"{recall([r for r in rows if r['category'] == c], lam, 10):.1f}" for c in CATEGORIES)
        per = " ".join(f"{recall([r for r in rows if r['folder'] == c], lam, 10):.1f}" for c in convs)
        print(f"λ {lam:<5} {cats}   all R@10 {recall(rows, lam, 10):.1f}   {per}")
    sys.exit(0)
the150 = [r for r in rows if r["qid"].startswith("questions:")]
held = [r for r in rows if not r["qid"].startswith("questions:")]
folders = sorted({r["folder"] for r in rows})
print(f"MRR@10 / any@1 / any@10; folds are MRR@10 per folder ({', '.join(folders)})")
for lam in lambdas:
    per = " ".join(f"{scored([r for r in rows if r['folder'] == fo], lam)[0]:.3f}" for fo in folders)
    print(f"λ {lam:<5} the 150 ({len(the150)}) {'%.3f / %.3f / %.3f' % scored(the150, lam)}   "
          f"held out ({len(held)}) {'%.3f / %.3f / %.3f' % scored(held, lam)}   {per}")
