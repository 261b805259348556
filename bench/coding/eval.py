#!/usr/bin/env python3
"""Scores a `ghola search` configuration on the coding-history benchmark (questions.json): any@1/5/10 and MRR@10
over the matched messages, and how often the evidence is anywhere in the response (matched messages or context),
overall and per slice. Each corpus folder is indexed once into its own index under --work.

    python3 bench/coding/eval.py [--ghola target/release/ghola] [--corpus ../shared/corpus] [--work /tmp/ghola-coding]
        [--scope project|global] [--jobs 2] [--misses OUT] [--one-index [--also CLAUDE_DIR]]
        [-- EXTRA SEARCH ARGS, e.g. --context 0 --lexical-weight 0.5]

--misses writes, for every question whose gold is not the first hit, the first hit (role, kind, whether it is in
the gold's session, its scores and the head of its text) beside each gold message as `ghola show` reads it: what
to read before guessing why the ranking misses (docs/search.md, "Words that lead into a call").
"""
import argparse, json, shutil, statistics, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from entries import Entries  # noqa: E402

here = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(here.parent.parent / "target/release/ghola"))
ap.add_argument("--questions", default=str(here / "questions.json"), help="the question set (questions.json, or holdout.json: written once over sessions no question had used, never tuned on)")
ap.add_argument("--corpus", default=str(here.parent.parent.parent / "shared/corpus"))
ap.add_argument("--work", default="/tmp/ghola-coding")
ap.add_argument("--scope", choices=["project", "global"], default="project")
ap.add_argument("--misses", help="write the first hit and the gold of every question not answered first here")
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--json", help="write per-question results here")
ap.add_argument("--one-index", action="store_true",
                help="index every corpus folder's projects (and --also's) as one history, as a user's index holds "
                     "every project, instead of each folder apart (docs/search.md, \"A project's matches\")")
ap.add_argument("--also", action="append", default=[],
                help="with --one-index: a Claude config dir whose projects join the history (e.g. a copy of "
                     "../shared/bench/locomo-dev/.claude)")
ap.add_argument("extra", nargs=argparse.REMAINDER)
a = ap.parse_args()
extra = [x for x in a.extra if x != "--"]
questions = json.load(open(a.questions))["questions"]

one = Path(a.work) / "one"
if a.one_index:
    # Copied (never indexed in place under ../shared): every folder's projects side by side in one config dir.
    projects = one / "claude" / "projects"
    if not projects.is_dir():
        for src in sorted(Path(a.corpus).glob("*/projects")) + [Path(d) / "projects" for d in a.also]:
            shutil.copytree(src, projects, dirs_exist_ok=True)

def base(folder):
    if a.one_index:
        return [a.ghola, "--claude-dir", str(one / "claude"), "--index-dir", str(one / "index")]
    return [a.ghola, "--claude-dir", f"{a.corpus}/{folder}", "--index-dir", f"{a.work}/{folder}"]

for folder in sorted({q["corpus"] for q in questions}) if not a.one_index else ["one"]:
    r = subprocess.run(base(folder) + ["index"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"indexing {folder} failed: {r.stderr}")

def run(q):
    scope = ["--project=" + q["project"]] if a.scope == "project" else ["--global"]
    cmd = base(q["corpus"]) + ["search", q["question"], *scope, "--limit", "10", "--json", "--no-update", *extra]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    took = time.time() - t
    if r.returncode != 0:
        return q, None, took, r.stderr.strip()
    return q, json.loads(r.stdout), took, None

with ThreadPoolExecutor(a.jobs) as pool:
    done = list(pool.map(run, questions))

sessions = {}

def gold_entry(q, uuid):
    """A gold message as `ghola show --json --subagents` reads it (as check.py does: merged assistant replies and
    subagent messages count), each session read once: role, kinds of its parts, text length, head of the text."""
    key = (q["corpus"], q["session"])
    if key not in sessions:
        r = subprocess.run(base(q["corpus"]) + ["show", q["session"], "--json", "--subagents"],
                           capture_output=True, text=True)
        sessions[key] = {m["uuid"]: m for m in json.loads(r.stdout)["messages"]} if r.returncode == 0 else {}
    m = sessions[key].get(uuid)
    if m is None:
        return None
    text = " ".join(p.get("text") or p.get("summary") or "" for p in m["parts"])
    return {"role": m["role"], "kinds": [p["kind"] for p in m["parts"]], "chars": len(text), "head": text[:200]}

entries_of = Entries()


def entries(q, session, uuid):
    """Every transcript entry a hit stands for (bench/entries.py)."""
    return entries_of.of(base(q["corpus"]), q["corpus"], session, uuid)


rows, missed = [], []
for q, resp, took, err in done:
    gold = set(q["gold"])
    results = (resp or {}).get("results", [])
    ranked = [entries(q, h["matched_message"]["session_id"], h["matched_message"]["uuid"]) for h in results]
    rank = next((i + 1 for i, us in enumerate(ranked) if us & gold), None)
    # Evidence anywhere in the response: a matched message or any message of a result's context.
    shown = set().union(*ranked)
    for h in results:
        for c in h.get("context", []):
            shown |= entries(q, h["matched_message"]["session_id"], c["uuid"])
    rows.append({"id": q["id"], "slice": q["slice"], "rank": rank, "in_response": bool(gold & shown),
                 "chars": len(json.dumps(resp)) if resp else 0, "seconds": took, "error": err})
    if a.misses and rank != 1 and resp and resp.get("results"):
        top = resp["results"][0]
        m = top["matched_message"]
        missed.append({"id": q["id"], "slice": q["slice"], "question": q["question"], "rank": rank,
                       "first": {"role": m["role"], "kind": m["kind"], "same_session": m["session_id"] == q["session"],
                                 "scores": top.get("scores"), "chars": len(m["content"]), "head": m["content"][:200]},
                       "gold": [gold_entry(q, g) for g in q["gold"]]})

def score(rs):
    n = len(rs)
    at = lambda k: sum(1 for r in rs if r["rank"] and r["rank"] <= k) / n
    mrr = sum(1 / r["rank"] for r in rs if r["rank"] and r["rank"] <= 10) / n
    inr = sum(1 for r in rs if r["in_response"]) / n
    return f"{n:>3}  {at(1):.3f}  {at(5):.3f}  {at(10):.3f}  {mrr:.3f}   {inr:.3f}"

print(f"command: {' '.join([a.ghola, 'search', '<question>', '--project <p>' if a.scope == 'project' else '--global', '--limit 10', '--json', '--no-update', *extra])}")
print("slice                 n  any@1  any@5 any@10 MRR@10  in-response")
print(f"{'all':<20}{score(rows)}")
for s in sorted({r["slice"] for r in rows}):
    print(f"{s:<20}{score([r for r in rows if r['slice'] == s])}")
errors = [r for r in rows if r["error"]]
print(f"median response {statistics.median(r['chars'] for r in rows):.0f} chars; median latency "
      f"{statistics.median(r['seconds'] for r in rows):.2f} s; errors {len(errors)}")
for r in errors:
    print(f"  {r['id']}: {r['error']}")
misses = [r["id"] for r in rows if not r["rank"]]
print(f"not in the top 10: {' '.join(misses) or 'none'}")
if a.json:
    json.dump(rows, open(a.json, "w"), indent=1)
if a.misses:
    json.dump(missed, open(a.misses, "w"), indent=1, ensure_ascii=False)
    same = sum(1 for x in missed if x["first"]["same_session"])
    print(f"first hit not gold: {len(missed)} questions, the first hit in the gold's session for {same}; see {a.misses}")
