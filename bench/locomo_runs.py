"""What the LoCoMo studies share (bench/list_questions.py, second_hop.py, maxsim_study.py, sentence_vectors.py):
their arguments (the binary, the model, the --work of `bench/locomo_recall.py`, which holds the corpus copy and its
index) and one search per dev question, project scope, no context, no relative floor."""
import argparse, json, subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

root = Path(__file__).resolve().parent.parent


def arguments(parser=None):
    """A parser with --ghola, --model-dir and --work (add a study's own before calling parse_args)."""
    ap = parser or argparse.ArgumentParser()
    ap.add_argument("--ghola", default=str(root / "target/release/ghola"))
    ap.add_argument("--model-dir", default=str(root / "models/all-MiniLM-L6-v2"))
    ap.add_argument("--work", default="/tmp/locomo-recall")
    return ap


def top_hits(a, questions, limit):
    """Each question's top `limit` as ghola returns them (JSON results), in the questions' order."""
    work = Path(a.work)
    ghola = [a.ghola, "--claude-dir", str(work / "corpus/.claude"), "--index-dir", str(work / "index"),
             "--model-dir", a.model_dir]

    def one(q):
        r = subprocess.run(ghola + ["search", q["question"], "--project", q["cwd"], "--context", "0", "--limit",
                                    str(limit), "--relative-floor", "0", "--json", "--no-update"],
                           capture_output=True, text=True, check=True)
        return json.loads(r.stdout)["results"]

    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(one, questions))
