#!/usr/bin/env python3
"""The coding questions scored by the shared harness (`../shared/bench/eval_tool.py`), the way an outside reader
scores ghola: a hit counts only by `matched_message.uuid`, and a message is a transcript line with text
(`common.load_messages`: user and assistant lines of the top-level session files, their `text` blocks; a line of
only thinking, tool calls or tool results is not a message there, and neither is a subagent's).

Our sets name a reply by its first entry and may name a tool output; for this reading each question's gold
becomes the lines with text among its gold messages' entries, and a question with none is left out (the harness
could not have been given it). The per-question metrics are the harness's own, pooled over the corpus folders.

    python3 bench/coding/shared_harness.py [--questions bench/coding/SET.json ...] [--scope project|global]
        [--work /tmp/coding-shared] [--ghola target/release/ghola] [-- EXTRA SEARCH ARGS]

Needs numpy (the harness's own dependency; `/tmp/benchvenv/bin/python`). Each folder's index is built by the
harness's `--setup` under --work/<folder> (HOME there), never under ../shared.
"""
import argparse, json, subprocess, sys
from collections import Counter, defaultdict
from pathlib import Path

here = Path(__file__).resolve().parent
root = here.parent.parent
shared = root.parent / "shared"
sys.path.insert(0, str(shared / "bench"))
from common import load_messages, score_question  # noqa: E402

sys.path.insert(0, str(here.parent))
from plain_fusion import bm25, embedded, fused_order, words  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--questions", action="append", help="question sets (default: all five)")
ap.add_argument("--scope", choices=["project", "global"], default="project")
ap.add_argument("--work", default="/tmp/coding-shared")
ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
ap.add_argument("--corpus", default=str(shared / "corpus"))
ap.add_argument("--json", help="write {set: {id: metrics}} here")
ap.add_argument("extra", nargs=argparse.REMAINDER)
a = ap.parse_args()
extra = [x for x in a.extra if x != "--"]
sets = a.questions or [str(here / f"{s}.json") for s in ("questions", "holdout", "holdout2", "inputs", "holdout3")]


def entries_of(folder):
    """Every top-level line's uuid → the uuids of the message ghola makes of it (a reply's pieces share one)."""
    groups = {}
    for f in sorted(Path(folder).glob("projects/*/*.jsonl")):
        first = {}
        for line in open(f, encoding="utf-8", errors="replace"):
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(e, dict) or not e.get("uuid"):
                continue
            mid = (e.get("message") or {}).get("id") if e.get("type") == "assistant" else None
            if mid and mid in first:
                groups[first[mid]].append(e["uuid"])
                groups[e["uuid"]] = groups[first[mid]]
            else:
                groups[e["uuid"]] = [e["uuid"]]
                if mid:
                    first[mid] = e["uuid"]
    return groups


work = Path(a.work)
by_folder = defaultdict(list)
left_out = defaultdict(int)
cache = {}
for path in sets:
    name = Path(path).stem
    for q in json.load(open(path))["questions"]:
        folder = q["corpus"]
        home = work / folder
        if folder not in cache:
            home.mkdir(parents=True, exist_ok=True)
            link = home / ".claude"
            if not link.exists():
                link.symlink_to(Path(a.corpus) / folder)
            msgs = load_messages(home)
            cache[folder] = ({m["uuid"]: m for m in msgs}, entries_of(Path(a.corpus) / folder), msgs)
        lines, groups, _ = cache[folder]
        gold = sorted({u for g in q["gold"] for u in groups.get(g, [g]) if u in lines})
        if not gold:
            left_out[name] += 1
            continue
        by_folder[folder].append({"qid": f"{name}:{q['id']}", "question": q["question"], "cwd": q["project"],
                                  "gold_uuids": gold, "gold_sessions": sorted({lines[u]["session_id"] for u in gold}),
                                  "category": name})

metrics = defaultdict(dict)
counts = defaultdict(int)
for folder, qs in sorted(by_folder.items()):
    home = work / folder
    json.dump(qs, open(home / "gold.json", "w"))
    base = [a.ghola, "--model-dir", a.model_dir]
    cmd = [sys.executable, str(shared / "bench/eval_tool.py"), str(home), "--scope", a.scope, "--k", "10",
           "--jobs", "2", "--setup", " ".join(base + ["index"]), "--out", str(home / "result.json"), "--",
           *base, "search", "{query}", "--limit", "{k}", "--json", "--no-update", "--context", "0"]
    cmd += ["--project={project_dir}"] if a.scope == "project" else ["--global"]
    cmd += extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"eval_tool failed on {folder}: {r.stderr[-2000:]}")
    res = json.load(open(home / "result.json"))["scopes"][a.scope]
    for qid, rec in res["per_question"].items():
        name, qi = qid.split(":", 1)
        metrics[name][qi] = rec["metrics"]
    for k, v in res["summary"].items():
        if isinstance(v, int):
            counts[k] += v

# The floor in the harness's own universe (its README's baselines): plain RRF (k = 60) of BM25 and MiniLM cosine
# over the lines with text, within the question's project (or its whole folder in global scope).
floor = defaultdict(dict)
for folder, qs in sorted(by_folder.items()):
    msgs = cache[folder][2]
    vecs = embedded(a.ghola, a.model_dir, [m["text"] for m in msgs] + [q["question"] for q in qs], work / folder)
    mvec, qvec = vecs[: len(msgs)], vecs[len(msgs):]
    for qi, q in enumerate(qs):
        idx = [i for i, m in enumerate(msgs) if a.scope == "global" or m["cwd"] == q["cwd"]]
        docs = [Counter(words(msgs[i]["text"])) for i in idx]
        order = fused_order(bm25(docs, words(q["question"])), mvec[idx] @ qvec[qi])
        ranked = [msgs[idx[j]]["uuid"] for j in order[:10]]
        name, qid = q["qid"].split(":", 1)
        floor[name][qid] = score_question(ranked, q["gold_uuids"])

print(f"shared harness (matched_message.uuid, lines with text), {a.scope} scope {' '.join(extra)}")
print(f"{'set':<12} {'n':>4} {'left out':>8}  {'any@1':>6} {'any@10':>6} {'MRR':>6}  {'floor any@1':>11} {'any@10':>6} {'MRR':>6}")
pooled, pooled_floor = [], []


def row(label, rows, frows, out):
    m = lambda rs, k: sum(r[k] for r in rs) / len(rs)
    print(f"{label:<12} {len(rows):>4} {out:>8}  {m(rows, 'any@1'):6.3f} {m(rows, 'any@10'):6.3f} "
          f"{m(rows, 'mrr'):6.3f}  {m(frows, 'any@1'):11.3f} {m(frows, 'any@10'):6.3f} {m(frows, 'mrr'):6.3f}")


for path in sets:
    name = Path(path).stem
    rows = list(metrics[name].values())
    frows = [floor[name][q] for q in metrics[name]]
    if name != "questions":
        pooled += rows
        pooled_floor += frows
    if rows:
        row(name, rows, frows, left_out[name])
if pooled:
    row("held out", pooled, pooled_floor, "")
print("hits the harness does not know:", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
if a.json:
    json.dump(metrics, open(a.json, "w"), indent=1)
