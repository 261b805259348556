#!/usr/bin/env python3
"""Checks the gold of the coding-history benchmark: every gold uuid is a message of the named session (as
`ghola show --json --subagents` reads it, so merged assistant replies and subagent messages count), the session
belongs to the named project, and the first gold message contains the evidence text verbatim.

    python3 bench/coding/check.py [--ghola target/release/ghola] [--corpus ../shared/corpus]
"""
import argparse, json, subprocess, sys
from pathlib import Path

here = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(here.parent.parent / "target/release/ghola"))
ap.add_argument("--questions", default=str(here / "questions.json"), help="the question set (questions.json, or holdout.json: written once over sessions no question had used, never tuned on)")
ap.add_argument("--corpus", default=str(here.parent.parent.parent / "shared/corpus"))
a = ap.parse_args()

questions = json.load(open(a.questions))["questions"]
sessions = {}
problems = []
for q in questions:
    key = (q["corpus"], q["session"])
    if key not in sessions:
        out = subprocess.run([a.ghola, "--claude-dir", f"{a.corpus}/{q['corpus']}", "show", q["session"], "--json",
                              "--subagents"], capture_output=True, text=True)
        if out.returncode != 0:
            problems.append(f"{q['id']}: cannot read session {q['session']}: {out.stderr.strip()}")
            continue
        sessions[key] = json.loads(out.stdout)
    s = sessions[key]
    by_uuid = {m["uuid"]: m for m in s["messages"]}
    if s["project"] != q["project"]:
        problems.append(f"{q['id']}: session project is {s['project']}, not {q['project']}")
    if not q["gold"]:
        problems.append(f"{q['id']}: no gold")
    for g in q["gold"]:
        if g not in by_uuid:
            problems.append(f"{q['id']}: gold {g} is not a message of {q['session']}")
    if q["gold"] and q["gold"][0] in by_uuid:
        text = json.dumps(by_uuid[q["gold"][0]]["parts"], ensure_ascii=False)
        if q["evidence"] not in text:
            problems.append(f"{q['id']}: evidence {q['evidence']!r} not in {q['gold'][0]}")
slices = {}
for q in questions:
    slices[q["slice"]] = slices.get(q["slice"], 0) + 1
print(f"{len(questions)} questions, slices {slices}; {len(problems)} problems")
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
