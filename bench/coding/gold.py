#!/usr/bin/env python3
"""Writes a question set's gold from its evidence: every message of the named session (subagents included, as
`ghola show --json --subagents` reads it) whose parts hold the evidence text verbatim, in session order — the
rule the held-out sets follow ("every message of the named session that holds the evidence"). The project is
taken from the session. Run it once, when the questions are written and before any ranking of them is seen.

    python3 bench/coding/gold.py DRAFT.json OUT.json --about "what the set is" [--ghola target/release/ghola]

DRAFT.json: a list of [id, slice, corpus folder, project (ignored, read from the session), session, question,
evidence].
"""
import argparse, json, subprocess, sys
from pathlib import Path

here = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("draft")
ap.add_argument("out")
ap.add_argument("--about", required=True)
ap.add_argument("--ghola", default=str(here.parent.parent / "target/release/ghola"))
ap.add_argument("--corpus", default=str(here.parent.parent.parent / "shared/corpus"))
a = ap.parse_args()

questions, problems, sessions = [], [], {}
for qid, kind, corpus, _project, session, question, evidence in json.load(open(a.draft)):
    key = (corpus, session)
    if key not in sessions:
        r = subprocess.run([a.ghola, "--claude-dir", f"{a.corpus}/{corpus}", "show", session, "--json",
                            "--subagents"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{qid}: cannot read session {session}: {r.stderr.strip()}")
        sessions[key] = json.loads(r.stdout)
    s = sessions[key]
    gold = [m["uuid"] for m in s["messages"] if evidence in json.dumps(m["parts"], ensure_ascii=False)]
    if not gold:
        problems.append(f"{qid}: evidence {evidence!r} is in no message of {session}")
    questions.append({"id": qid, "slice": kind, "corpus": corpus, "project": s["project"], "session": session,
                      "question": question, "gold": gold, "evidence": evidence})
json.dump({"about": a.about, "questions": questions}, open(a.out, "w"), indent=1, ensure_ascii=False)
print(f"{len(questions)} questions, {sum(len(q['gold']) for q in questions)} gold messages; {len(problems)} problems")
for p in problems:
    print("  " + p)
sys.exit(1 if problems else 0)
