#!/usr/bin/env python3
"""One ranking change, before against after, on every coding measure in one sitting: our scorer's MRR@10 on the
five sets (`eval.py`, a tool output can be gold) and the shared harness in project and global scope
(`shared_harness.py`, lines with text only), then which questions moved. Each build is given the same indexes, so
the figures differ only by what the builds rank differently (an index is read, never rebuilt, when its build's
model id matches). A change in what an index stores (a message's text, its vectors) needs `--own-indexes`: each
build then indexes for itself, under the work folders' names with `-before` / `-after` added.

    python3 bench/coding/compare.py --before BIN --after BIN [--work /tmp/ghola-coding] [--harness-work
        /tmp/coding-shared] [--out /tmp/compare] [--own-indexes] [-- EXTRA SEARCH ARGS]

A build copied out of `target/` finds no model beside it: the script sets GHOLA_MODEL_DIR to models/ of this
checkout unless it is set. Needs numpy for the harness (`/tmp/benchvenv/bin/python`); our scorer runs with the
same interpreter.
"""
import argparse, json, os, subprocess, sys
from pathlib import Path

here = Path(__file__).resolve().parent
root = here.parent.parent
SETS = ("questions", "holdout", "holdout2", "inputs", "holdout3")

ap = argparse.ArgumentParser()
ap.add_argument("--before", required=True)
ap.add_argument("--after", required=True)
ap.add_argument("--work", default="/tmp/ghola-coding", help="indexes for our scorer (eval.py --work)")
ap.add_argument("--harness-work", default="/tmp/coding-shared", help="indexes for the harness (shared_harness.py --work)")
ap.add_argument("--out", default="/tmp/compare")
ap.add_argument("--own-indexes", action="store_true",
                help="each build indexes for itself (WORK-before, WORK-after): a change in what is stored")
ap.add_argument("extra", nargs=argparse.REMAINDER)
a = ap.parse_args()
extra = [x for x in a.extra if x != "--"]
os.environ.setdefault("GHOLA_MODEL_DIR", str(root / "models/all-MiniLM-L6-v2"))
out = Path(a.out)
out.mkdir(parents=True, exist_ok=True)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{r.stderr[-2000:]}")
    return r.stdout


def measure(tag, ghola):
    """Per-question results of build `ghola`: {(measure, set, id): reciprocal rank}, and the pooled figures."""
    rr, figures = {}, {}
    work, harness_work = (f"{a.work}-{tag}", f"{a.harness_work}-{tag}") if a.own_indexes else (a.work, a.harness_work)
    for s in SETS:
        path = out / f"{tag}-{s}.json"
        run([sys.executable, str(here / "eval.py"), "--ghola", ghola, "--work", work, "--questions",
             str(here / f"{s}.json"), "--json", str(path), "--", "--context", "0", *extra])
        rows = json.load(open(path))
        for r in rows:
            rr[("ours", s, r["id"])] = 1 / r["rank"] if r["rank"] else 0.0
        figures[("ours", s)] = sum(rr[("ours", s, r["id"])] for r in rows) / len(rows)
    for scope in ("project", "global"):
        path = out / f"{tag}-harness-{scope}.json"
        run([sys.executable, str(here / "shared_harness.py"), "--ghola", ghola, "--work", harness_work,
             "--scope", scope, "--json", str(path), "--", *extra])
        per = json.load(open(path))
        held = []
        for s, qs in per.items():
            for qid, m in qs.items():
                rr[(f"harness {scope}", s, qid)] = m["mrr"]
                if s != "questions":
                    held.append(m)
        the150 = list(per.get("questions", {}).values())
        mean = lambda ms, k: sum(m[k] for m in ms) / len(ms) if ms else float("nan")
        figures[(f"harness {scope}", "the 150")] = mean(the150, "mrr")
        figures[(f"harness {scope}", "held out")] = mean(held, "mrr")
        figures[(f"harness {scope}", "held out any@1")] = mean(held, "any@1")
    return rr, figures


before, fb = measure("before", a.before)
after, fa = measure("after", a.after)
print(f"{'measure':<18} {'set':<16} {'before':>7} {'after':>7}")
for key in fb:
    mark = "" if abs(fa[key] - fb[key]) < 5e-4 else "  *"
    print(f"{key[0]:<18} {key[1]:<16} {fb[key]:7.3f} {fa[key]:7.3f}{mark}")
moved = [(k, before[k], after.get(k, 0.0)) for k in before if abs(after.get(k, 0.0) - before[k]) > 1e-9]
print(f"\nquestions that moved ({len(moved)}):" if moved else "\nno question moved")
for (measure_, s, qid), x, y in sorted(moved):
    print(f"  {measure_:<16} {s:<10} {qid:<6} {x:.3f} -> {y:.3f}")
