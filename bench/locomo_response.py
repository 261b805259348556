#!/usr/bin/env python3
"""How often the evidence of a LoCoMo dev question is anywhere in ghola's response (matched messages or their
context) with the given search arguments (default: the tools' defaults, context 3, 10 results), and how big the
responses are. Complements ../shared/bench/eval_tool.py, which scores the matched messages only.

    HOME=/tmp/locomo-dev target/release/ghola index      # on a copy of ../shared/bench/locomo-dev
    python3 bench/locomo_response.py /tmp/locomo-dev [-- EXTRA SEARCH ARGS]
"""
import json, os, statistics, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

root = Path(sys.argv[1])
extra = [x for x in sys.argv[2:] if x != "--"]
ghola = str(Path(__file__).resolve().parent.parent / "target/release/ghola")
gold = json.load(open(root / "gold.json"))
env = dict(os.environ, HOME=str(root))
env.pop("CLAUDE_CONFIG_DIR", None)

def run(q):
    cmd = [ghola, "search", q["question"], "--project", q["cwd"], "--json", "--no-update", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
    resp = json.loads(out)
    shown = set()
    for h in resp["results"]:
        shown.add(h["matched_message"]["uuid"])
        shown.update(c["uuid"] for c in h["context"])
    return bool(shown & set(q["gold_uuids"])), len(out)

with ThreadPoolExecutor(2) as pool:
    rows = list(pool.map(run, gold))
found = sum(1 for f, _ in rows if f) / len(rows)
sizes = [n for _, n in rows]
print(f"command: ghola search <question> --project <conversation> --json --no-update {' '.join(extra)}")
print(f"{len(rows)} questions: evidence in the response {found:.3f}; response chars median {statistics.median(sizes):.0f}, "
      f"max {max(sizes)}")
