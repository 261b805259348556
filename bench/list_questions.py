#!/usr/bin/env python3
"""A question that asks for several things of a kind ("What books has John read?"), its hits taking turns between
sessions (issue #51; docs/search.md, "Fewer hits per session, tried and not kept"): LoCoMo dev R@5 / R@10 per
category when, for such questions only, a session's hits beyond its first f are multiplied by d per hit of that
session before them, and ghola's top hundred re-ordered by the new scores.

    python3 bench/list_questions.py [--ghola target/release/ghola] [--work /tmp/locomo-recall]

--work is where `bench/locomo_recall.py` copied the corpus and built its index (run that first).
"""
import json, re, sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_runs import arguments, top_hits  # noqa: E402

a = arguments().parse_args()

work = Path(a.work)
questions = json.load(open(work / "corpus/gold.json"))
session = {}
for line in open(work / "corpus/messages.jsonl"):
    t = json.loads(line)
    session[t["uuid"]] = t["session_id"]
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain"}


def asks_for_several(q):
    """'What/Which' and a plural noun: "What activities …", "Which books …" (not "What is", "What does")."""
    m = re.match(r"(?i)(what|which)\s+(\w+)", q)
    w = m.group(2).lower() if m else ""
    return w.endswith("s") and w not in {"is", "was", "does", "has", "this", "its", "his", "kinds", "sorts", "types"}


ranked = [[(h["matched_message"]["uuid"], h["score"]) for h in hits] for hits in top_hits(a, questions, 100)]
several = [asks_for_several(q["question"]) for q in questions]
print("questions asking for several things:",
      ", ".join(f"{CATEGORIES[c]} {sum(s for q, s in zip(questions, several) if q['category'] == c)}"
                f" of {sum(q['category'] == c for q in questions)}" for c in CATEGORIES))


def taking_turns(hits, d, f):
    seen, out = Counter(), []
    for uuid, score in hits:
        s = session.get(uuid)
        out.append((score * d ** max(0, seen[s] - f + 1), uuid))
        seen[s] += 1
    return [u for _, u in sorted(out, key=lambda x: -x[0])]


print(f"{'d, f, which questions':26}" + "".join(f"{c:>14}" for c in CATEGORIES.values()))
for d, f, only in [(1, 1, True), (0.8, 2, False), (0.8, 1, True), (0.8, 2, True), (0.6, 1, True), (0.5, 1, True)]:
    recall = defaultdict(list)
    for q, hits, s in zip(questions, ranked, several):
        order = taking_turns(hits, d, f) if (s or not only) else [u for u, _ in hits]
        gold = set(q["gold_uuids"])
        recall[q["category"]].append((len(gold & set(order[:5])) / len(gold), len(gold & set(order[:10])) / len(gold)))
    label = "now" if d == 1 else f"{d}, {f}, {'those' if only else 'every'}"
    print(f"{label:26}" + "".join(
        f"{100 * sum(r for r, _ in recall[c]) / len(recall[c]):>7.1f}/{100 * sum(r for _, r in recall[c]) / len(recall[c]):<6.1f}"
        for c in CATEGORIES))
