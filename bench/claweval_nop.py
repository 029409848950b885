"""All of CLAW-Eval's tasks through this project with the nop agent: every trial must be graded or fail for a
reason that is not this project's machinery (no `infra` error: the services start, their audit is read, the
grader classes run).

    python bench/claweval_nop.py --upstream CHECKOUT [--python PY] [--parallel N] [--out DIR] [--filter SUBSTR]

The judge is this project's scripted model server answering every judge request `{"score": 0.0, ...}` (a nop
agent deserves nothing; graders that parse their own judge formats read it as "nothing found"), so judge-using
graders run too. Prints the counts by outcome and every infra error.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))

from clawkube.benchmarks.claweval.checkout import benchmark_python  # noqa: E402
from clawkube.modelserver import Script, ServerThread  # noqa: E402

JUDGE = Script.model_validate({"rules": [{"when": {"model": "judge"}, "text": '{"score": 0.0, "reasoning": "nop"}'}]})


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--python")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--filter", help="only task ids containing this")
    a = ap.parse_args(argv)
    root = a.upstream.resolve()
    out = (a.out or Path(tempfile.mkdtemp(prefix="claweval-nop-"))).resolve()
    ids = sorted(d.name for d in (root / "tasks").iterdir() if (d / "task.yaml").is_file()
                 and (a.filter is None or a.filter in d.name))
    with ServerThread(JUDGE) as server:
        run = {"tasks": {"path": str(root / "tasks")}, "selector": {"ids": ids}, "agent": {"harness": "nop"},
               "judge": {"baseUrl": server.url + "/v1", "model": "judge"}, "parallelism": a.parallel,
               "retry": {"infra": 1, "gradingError": 1}}
        out.mkdir(parents=True, exist_ok=True)
        (out / "run.yaml").write_text(yaml.safe_dump(run))
        env = {**os.environ, "PYTHONPATH": str(REPO / "operator"),
               "CLAWKUBE_CLAWEVAL_PYTHON": benchmark_python(root, a.python)}
        p = subprocess.run([sys.executable, "-m", "clawkube", "run", str(out / "run.yaml"), "--out", str(out / "results"),
                            "--quiet", "--fresh"], env=env, capture_output=True, text=True)
        (out / "run.log").write_text(p.stdout + p.stderr)
    results = [json.loads(f.read_text()) for f in sorted((out / "results" / "trials").glob("*/*/result.json"))]
    kinds = Counter(r.get("error_kind") or ("graded" if r.get("score") else "failed") for r in results)
    print(f"CLAW-Eval with the nop agent: {len(results)}/{len(ids)} trials finished; outcomes: {dict(sorted(kinds.items()))}")
    graded = [r for r in results if r.get("score")]
    if graded:
        print(f"graded: {len(graded)}, mean task_score {sum(r['score']['score'] for r in graded) / len(graded):.4f}, "
              f"passed {sum(r['score']['passed'] for r in graded)}")
    for r in results:
        if r.get("error_kind") in ("infra", "grading_error"):
            print(f"  {r['task_id']}: {r['error_kind']}: {(r.get('error_message') or '')[:300]}")
    print(f"results: {out / 'results'}")
    return 0 if len(results) == len(ids) and kinds.get("infra", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
