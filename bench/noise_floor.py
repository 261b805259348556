#!/usr/bin/env python3
"""Where the floor for hits that share no word with the query lies (issue #47, "no noise"): on the LoCoMo dev half,
the cosines of gold turns ghola returns in its top 10 without a lexical match (what a floor would lose), against
the cosines of the hits it returns without a lexical match when the question is asked of *another* conversation
(nothing there answers it: what a floor should cut).

    python3 bench/noise_floor.py [--ghola target/release/ghola] [--work /tmp/locomo-recall]
    python3 bench/noise_floor.py --coding [--corpus ../shared/corpus] [--coding-work /tmp/ghola-coding]

Run bench/locomo_recall.py first (it copies the corpus and builds the index under --work). With --coding, the
coding set instead: its questions in their project, and each asked globally of another corpus folder.
"""
import argparse, json, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

here = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(here.parent / "target/release/ghola"))
ap.add_argument("--model-dir", default=str(here.parent / "models/all-MiniLM-L6-v2"))
ap.add_argument("--work", default="/tmp/locomo-recall")
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--coding", action="store_true")
ap.add_argument("--corpus", default=str(here.parent.parent / "shared/corpus"))
ap.add_argument("--coding-work", default="/tmp/ghola-coding")
a = ap.parse_args()


def table(gold_cos, noise_best, n):
    print(f"gold hits in the top 10 without a query word: {len(gold_cos)} (of {n} questions)")
    print(f"questions asked where nothing answers them with a hit without a query word: {len(noise_best)}")
    print(f"{'floor':>6} {'gold lost':>10} {'noise answers cut':>18}")
    for t in [0.20, 0.25, 0.30, 0.35, 0.40, 0.45]:
        lost = sum(c < t for c in gold_cos)
        cut = sum(c < t for c in noise_best)
        print(f"{t:>6.2f} {lost:>5} ({100 * lost / max(1, len(gold_cos)):4.1f}%) "
              f"{cut:>7} ({100 * cut / max(1, len(noise_best)):4.1f}%)")


def found(argv):
    r = subprocess.run(argv + ["--context", "0", "--limit", "10", "--json", "--no-update", "--threshold", "0"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ghola search failed: {' '.join(argv)}: {r.stderr.strip()}")
    return json.loads(r.stdout)["results"]


if a.coding:
    qs = json.load(open(here / "coding/questions.json"))["questions"]
    folders = sorted({q["corpus"] for q in qs})
    base = lambda f: [a.ghola, "--claude-dir", f"{a.corpus}/{f}", "--index-dir", f"{a.coding_work}/{f}",
                      "--model-dir", a.model_dir]
    for f in folders:
        subprocess.run(base(f) + ["index"], capture_output=True)

    def coding(q):
        other = [f for f in folders if f != q["corpus"]]
        other = other[sum(map(ord, q["id"])) % len(other)]
        own = found(base(q["corpus"]) + ["search", q["question"], "--project=" + q["project"]])
        return q, own, found(base(other) + ["search", q["question"], "--global"])

    with ThreadPoolExecutor(a.jobs) as pool:
        done = list(pool.map(coding, qs))
    gold_cos, noise_best = [], []
    for q, own, other in done:
        gold_cos += [h["scores"]["semantic"] for h in own
                     if h["matched_message"]["uuid"] in set(q["gold"]) and h["scores"]["lexical"] == 0]
        wordless = [h["scores"]["semantic"] for h in other if h["scores"]["lexical"] == 0]
        if wordless:
            noise_best.append(max(wordless))
    table(gold_cos, noise_best, len(qs))
    raise SystemExit
work = Path(a.work)
questions = json.load(open(work / "corpus/gold.json"))
ghola = [a.ghola, "--claude-dir", str(work / "corpus/.claude"), "--index-dir", str(work / "index"),
         "--model-dir", a.model_dir]
projects = sorted({q["cwd"] for q in questions})


def hits(question, project):
    r = subprocess.run(ghola + ["search", question, "--project", project, "--context", "0", "--limit", "10",
                                "--json", "--no-update", "--threshold", "0"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ghola search failed for {question!r}: {r.stderr.strip()}")
    return json.loads(r.stdout)["results"]


def both(q):
    other = projects[(projects.index(q["cwd"]) + 1) % len(projects)]
    return q, hits(q["question"], q["cwd"]), hits(q["question"], other)


with ThreadPoolExecutor(a.jobs) as pool:
    done = list(pool.map(both, questions))

gold_cos, noise_best = [], []
for q, own, other in done:
    gold = set(q["gold_uuids"])
    gold_cos += [h["scores"]["semantic"] for h in own
                 if h["matched_message"]["uuid"] in gold and h["scores"]["lexical"] == 0]
    wordless = [h["scores"]["semantic"] for h in other if h["scores"]["lexical"] == 0]
    if wordless:
        noise_best.append(max(wordless))
table(gold_cos, noise_best, len(questions))
