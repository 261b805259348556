#!/usr/bin/env python3
"""Whose uuid names a split reply (issue #47; docs/search.md, "Which entry names a reply"). Claude Code writes one
assistant reply as several transcript entries (thinking, text, each tool call) sharing a message id; ghola
merges them into one message named by the first entry's uuid, and the gold of bench/coding/*.json is written
that way. A question writer who picks the transcript line holding the evidence would name a later entry instead.
This scores ghola's top ten three ways: against the gold as written; against the gold renamed to the entry that
holds the evidence ("evidence-named"); and, as the bound of naming a hit by the entry that matched, counting a
hit when any entry of its reply is the evidence-named gold.

    python3 bench/coding/naming_check.py [--ghola target/release/ghola] [--work /tmp/ghola-coding]

Needs an index per corpus folder under --work (bench/coding/eval.py builds them).
"""
import argparse, json, subprocess
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from entries import entry_text

here = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(here.parent.parent / "target/release/ghola"))
ap.add_argument("--corpus", default=str(here.parent.parent.parent / "shared/corpus"))
ap.add_argument("--work", default="/tmp/ghola-coding")
a = ap.parse_args()


text, reply_of, entries_of = {}, {}, defaultdict(list)
for f in sorted(Path(a.corpus).glob("*/projects/**/*.jsonl")):
    folder = f.relative_to(a.corpus).parts[0]
    for line in open(f, errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if not isinstance(e, dict) or not e.get("uuid"):
            continue
        text[e["uuid"]] = entry_text(e)
        mid = (e.get("message") or {}).get("id") if e.get("type") == "assistant" else None
        if mid and e["uuid"] not in entries_of[(folder, mid)]:
            reply_of[e["uuid"]] = (folder, mid)
            entries_of[(folder, mid)].append(e["uuid"])


def evidence_named(q, kinds):
    out = set()
    for k, g in enumerate(q["gold"]):
        group = entries_of.get(reply_of.get(g), [g])
        holding = [u for u in group if k == 0 and q.get("evidence") and q["evidence"] in text.get(u, "")]
        if k == 0:
            kinds[("not a split reply" if len(group) == 1 else
                   "split, evidence in the first entry" if holding and holding[0] == group[0] else
                   "split, evidence in a later entry" if holding else "split, evidence not verbatim")] += 1
        out.add(holding[0] if holding else g)
    return out


def top10(q):
    cmd = [a.ghola, "--claude-dir", f"{a.corpus}/{q['corpus']}", "--index-dir", f"{a.work}/{q['corpus']}", "search",
           q["question"], "--project=" + q["project"], "--limit", "10", "--json", "--no-update", "--context", "0"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [x["matched_message"]["uuid"] for x in json.loads(r.stdout)["results"]]


def rr(ranked, hit):
    return next((1 / (i + 1) for i, u in enumerate(ranked) if hit(u)), 0.0)


for name in ("questions", "holdout", "holdout2"):
    qs = json.load(open(here / f"{name}.json"))["questions"]
    with ThreadPoolExecutor(2) as pool:
        ranked = list(pool.map(top10, qs))
    kinds = Counter()
    written = renamed = bound = 0.0
    for q, r in zip(qs, ranked):
        e = evidence_named(q, kinds)
        written += rr(r, lambda u: u in q["gold"])
        renamed += rr(r, lambda u: u in e)
        bound += rr(r, lambda u: bool(set(entries_of.get(reply_of.get(u), [u])) & e))
    n = len(qs)
    print(f"{name} ({n}): MRR@10 gold as written {written / n:.3f}, evidence-named {renamed / n:.3f}, "
          f"named by the matched entry (bound) {bound / n:.3f};  gold: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
