#!/usr/bin/env python3
"""Where the wrong line of the right session sits (issue #47; docs/search.md, "The wrong line of the right
session"): for the questions of a top-forty dump whose first hit is not gold but is in a gold session, how many
transcript lines lie between that hit and the nearest gold line, whether it comes before or after, and how close
the gold's score is to it; then, over every top ten, how often a hit that looks like a recap (a heading, the word
"summary", a "Perfect!/Done" opening, check marks, five bullets or more, over 1,500 characters) is gold against
the rate of all hits.

    /tmp/benchvenv/bin/python bench/coding/harness_factors.py --work /tmp/cs3 --dump /tmp/top40.json
    python3 bench/coding/wrong_line.py /tmp/top40.json [--corpus ../shared/corpus]
"""
import argparse, json, re, statistics
from collections import Counter
from pathlib import Path

root = Path(__file__).resolve().parent.parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("dump")
ap.add_argument("--corpus", default=str(root.parent / "shared/corpus"))
a = ap.parse_args()

place, text = {}, {}  # uuid -> (file, line number); uuid -> its text blocks
for f in Path(a.corpus).rglob("*.jsonl"):
    for i, line in enumerate(open(f, errors="replace")):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if not isinstance(d, dict) or "uuid" not in d:
            continue
        place[d["uuid"]] = (str(f), i)
        m = d.get("message")
        c = m.get("content") if isinstance(m, dict) else m
        if isinstance(c, list):
            c = " | ".join(b.get("text") or "" for b in c if isinstance(b, dict) and b.get("type") == "text")
        text[d["uuid"]] = str(c or "")

rows = json.load(open(a.dump))
where, apart, ratio = Counter(), [], []
for r in rows:
    hits, gold = r["hits"], set(r["gold"])
    k = next((i for i, h in enumerate(hits) if h["uuid"] in gold), None)
    if not hits or k == 0 or k is None:
        continue
    top = hits[0]
    if top["session"] not in r["sessions"]:
        where["another session"] += 1
        continue
    ratio.append(hits[k]["score"] / top["score"])
    t = place.get(top["uuid"])
    same = [place[g] for g in gold if g in place and t and place[g][0] == t[0]]
    if not same:
        where["another file of the session (a subagent)"] += 1
        continue
    d = min((t[1] - g[1] for g in same), key=abs)
    where["after the gold" if d > 0 else "before the gold"] += 1
    apart.append(abs(d))
print("first hit not gold:", dict(where))
print(f"lines apart: median {statistics.median(apart)}, within 5 lines {sum(d <= 5 for d in apart)} of {len(apart)}")
print(f"gold's score over the first hit's (gold in the top forty): median {statistics.median(ratio):.3f}, "
      f"≥ .95 {sum(x >= .95 for x in ratio)}, ≥ .9 {sum(x >= .9 for x in ratio)} of {len(ratio)}")

heading = re.compile(r"(^|\n)#{1,3} ")
looks = {
    "a heading": lambda t: bool(heading.search(t)),
    "the word summary": lambda t: bool(re.search(r"\bsummary\b", t, re.I)),
    "opens Perfect!/Done…, over 400 chars": lambda t: len(t) > 400
    and bool(re.match(r"\s*(perfect|excellent|great|all done|done|summary)\b", t, re.I)),
    "check marks": lambda t: "✅" in t,
    "five bullets or more": lambda t: len(re.findall(r"(^|\n)\s*([-*]|\d+\.) ", t)) >= 5,
    "over 1,500 characters": lambda t: len(t) > 1500,
    "any hit": lambda t: True,
}
print(f"{'top ten, a hit with':38} {'hits':>5} {'gold':>5} {'share':>6}")
for name, f in looks.items():
    n = g = 0
    for r in rows:
        for h in r["hits"][:10]:
            if f(text.get(h["uuid"], "")):
                n, g = n + 1, g + (h["uuid"] in r["gold"])
    print(f"{name:38} {n:5} {g:5} {g / max(n, 1):6.3f}")
