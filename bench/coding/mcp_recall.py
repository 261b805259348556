#!/usr/bin/env python3
"""The coding set through the MCP server, as a model meets it: one `search_project_history` call per question
(default arguments unless given), and whether the question's quoted evidence is in what the model got, at what
size; then one expansion of the best hit (`get_session_detail` with `around`, --around messages either side), as
bench/mcp_recall.py does for LoCoMo. Each corpus folder gets its own index (under --work, as eval.py makes them)
and its own `ghola serve`.

    python3 bench/coding/mcp_recall.py [--questions bench/coding/SET.json ...] [--work /tmp/ghola-coding]
        [--arg format=json --arg max_chars=40000]
"""
import argparse, json, os, re, statistics, subprocess, sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parent))
from mcp_client import Server, search_args  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--ghola", default=str(here.parent.parent / "target/release/ghola"))
ap.add_argument("--corpus", default=str(here.parent.parent.parent / "shared/corpus"))
ap.add_argument("--model-dir", default=str(here.parent.parent / "models/all-MiniLM-L6-v2"),
                help="the embedding model's folder (a --ghola outside a checkout finds none of its own)")
ap.add_argument("--work", default="/tmp/ghola-coding")
ap.add_argument("--arg", action="append", default=[], help="search argument NAME=VALUE")
ap.add_argument("--around", type=int, default=5, help="messages before and after the expanded hit")
ap.add_argument("--questions", action="append", help="question sets, pooled (default: questions.json, the 150)")
a = ap.parse_args()
extra = search_args(a.arg)
questions = [q for path in a.questions or [here / "questions.json"] for q in json.load(open(path))["questions"]]
env = dict(os.environ)
for k in ["CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID", "GHOLA_HOME"]:
    env.pop(k, None)
norm = lambda s: re.sub(r"\s+", " ", s).strip()
header = re.compile(r"^\[1\] .*? · session (\S+) window \d+ .*? · hit (\S+)", re.M)
rows = []
for folder in sorted({q["corpus"] for q in questions}):
    base = [a.ghola, "--model-dir", a.model_dir, "--claude-dir", f"{a.corpus}/{folder}", "--index-dir",
            f"{a.work}/{folder}"]
    subprocess.run(base + ["index"], capture_output=True, check=True)
    server = Server(base + ["serve"], env)
    mine = [q for q in questions if q["corpus"] == folder]
    server.wait_for_model(mine[0]["project"])
    for q in mine:
        err, text = server.call("search_project_history", {"query": q["question"], "project": q["project"], **extra})
        unescape = lambda t: norm(t.replace("\\n", " ").replace('\\"', '"'))
        found = not err and norm(q["evidence"]) in unescape(text)
        expanded = found
        more = ""
        m = header.search(text)
        if m and not err:
            e_err, more = server.call("get_session_detail", {"session_id": m.group(1), "around": m.group(2),
                                                             "before": a.around, "after": a.around})
            expanded = found or (not e_err and norm(q["evidence"]) in unescape(more))
        rows.append({"id": q["id"], "found": found, "expanded": expanded, "chars": len(text),
                     "expansion_chars": len(more)})
    server.close()
chars = sorted(r["chars"] for r in rows)
print(f"search_project_history {json.dumps(extra)}: {len(rows)} questions, evidence in the answer "
      f"{sum(r['found'] for r in rows) / len(rows):.3f} at median {int(statistics.median(chars))} chars "
      f"(p90 {chars[int(0.9 * (len(chars) - 1))]}); with one expansion "
      f"{sum(r['expanded'] for r in rows) / len(rows):.3f} (the expansion's median {int(statistics.median(r['expansion_chars'] for r in rows))} chars)")
print("missed:", " ".join(r["id"] for r in rows if not r["found"]) or "none",
      "| after the expansion:", " ".join(r["id"] for r in rows if not r["expanded"]) or "none")
