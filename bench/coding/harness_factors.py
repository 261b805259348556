#!/usr/bin/env python3
"""Factors on ghola's top forty, read the way the shared harness reads (issue #47; docs/search.md, "More under
the shared harness, tried and not kept"): a length prior, a factor on short messages and one on subagents' messages,
each applied to the scores ghola returns and the forty re-ordered, then scored by the first line with text that
is gold (MRR@10, any@1, any@10) on the 150, on the held-out sets, and per corpus folder (the folds).

    /tmp/benchvenv/bin/python bench/coding/harness_factors.py [--work /tmp/coding-shared] [--scope project|global]
        [--ghola target/release/ghola] [--dump OUT.json]

Run bench/coding/shared_harness.py with the same --work first: it writes each folder's gold.json (the lines with
text among a question's gold) and builds each folder's index under --work/<folder>. Also prints, for the questions
whose gold is not first, where the first hit is (the gold's session or not; a line the harness does not know).
"""
import argparse, json, math, os, subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

here = Path(__file__).resolve().parent
root = here.parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--work", default="/tmp/coding-shared")
ap.add_argument("--scope", choices=["project", "global"], default="project")
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--dump", help="write every question's top forty here (with each hit's text)")
a = ap.parse_args()

jobs = []
for home in sorted(Path(a.work).iterdir()):
    if (home / "gold.json").exists():
        jobs += [(home, q) for q in json.load(open(home / "gold.json"))]


def top40(job):
    home, q = job
    cmd = [a.ghola, "--model-dir", a.model_dir, "search", q["question"], "--limit", "40", "--json", "--no-update",
           "--context", "0", "--relative-floor", "0"]
    cmd += [f"--project={q['cwd']}"] if a.scope == "project" else ["--global"]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HOME": str(home)}).stdout
    hits = []
    for h in (json.loads(out)["results"] if out.strip() else []):
        m = h["matched_message"]
        hits.append({"uuid": m["uuid"], "score": h["score"], "kind": m.get("kind"), "sub": m.get("is_subagent", False),
                     "session": m.get("session_id"), "len": len(m.get("content") or ""),
                     "text": m.get("content") or ""})
    return {"folder": home.name, "qid": q["qid"], "question": q["question"], "gold": q["gold_uuids"],
            "sessions": q["gold_sessions"], "hits": hits}


with ThreadPoolExecutor(2) as ex:
    rows = list(ex.map(top40, jobs))
if a.dump:
    json.dump(rows, open(a.dump, "w"))


def scored(rs, factor):
    """(MRR@10, any@1, any@10) with every hit's score times factor(hit)."""
    out = []
    for r in rs:
        order = sorted(r["hits"], key=lambda h: -h["score"] * factor(h))[:10]
        rank = next((i + 1 for i, h in enumerate(order) if h["uuid"] in r["gold"]), None)
        out.append((1 / rank if rank else 0.0, 1.0 if rank == 1 else 0.0, 1.0 if rank else 0.0))
    return tuple(sum(x[j] for x in out) / max(len(out), 1) for j in range(3))


the150 = [r for r in rows if r["qid"].startswith("questions:")]
held = [r for r in rows if not r["qid"].startswith("questions:")]
folders = sorted({r["folder"] for r in rows})
factors = {"none": lambda h: 1.0}
for beta in (0.06, 0.1, 0.15):
    factors[f"length prior β={beta}"] = lambda h, b=beta: 1 + b * math.log(min(max(h["len"], 50), 2000) / 300)
for under in (80, 200):
    for f in (0.9, 0.8):
        factors[f"shorter than {under} × {f}"] = lambda h, u=under, f=f: f if h["len"] < u else 1.0
for f in (0.9, 0.8, 0.6):
    factors[f"subagent × {f}"] = lambda h, f=f: f if h["sub"] else 1.0

print(f"{a.scope} scope; MRR@10 / any@1 / any@10; folds are MRR@10 per corpus folder ({', '.join(folders)})")
print(f"{'factor':<26} {'the 150 (' + str(len(the150)) + ')':<20} {'held out (' + str(len(held)) + ')':<20} folds")
for name, fn in factors.items():
    per = " ".join(f"{scored([r for r in rows if r['folder'] == fo], fn)[0]:.3f}" for fo in folders)
    print(f"{name:<26} {'%.3f / %.3f / %.3f' % scored(the150, fn):<20} {'%.3f / %.3f / %.3f' % scored(held, fn):<20} {per}")

where = Counter()
for r in rows:
    if r["hits"] and r["hits"][0]["uuid"] not in r["gold"]:
        h = r["hits"][0]
        where["a subagent's line" if h["sub"] else "not a line with text" if h["kind"] != "text"
              else "the gold's session" if h["session"] in r["sessions"] else "another session"] += 1
print("first hit when it is not gold:", dict(where))
