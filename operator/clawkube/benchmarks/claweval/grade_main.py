"""The CLAW-Eval grading subprocess, under the benchmark Python (claw_eval and its requirements importable):

    BENCHMARK_PYTHON -m clawkube.benchmarks.claweval.grade_main REQUEST.json REPLY.json

REQUEST: a `grading.GraderRequest` (the judge's key, if any, in $CLAWKUBE_JUDGE_API_KEY); REPLY: a `GraderReply`.
"""
from __future__ import annotations

import sys
from pathlib import Path

from .grading import JUDGE_KEY_ENV, GraderReply, GraderRequest, NoJudgeConfigured, run_grader


def main(argv: list[str]) -> int:
    """Grade one trial; 0 when the grader returned scores."""
    import os
    import traceback

    sys.dont_write_bytecode = True  # never write into the checkout
    req = GraderRequest.model_validate_json(Path(argv[0]).read_text(encoding="utf-8"))
    judge = req.judge
    if judge is not None and judge.api_key is None and os.environ.get(JUDGE_KEY_ENV):
        judge = judge.model_copy(update={"api_key": os.environ[JUDGE_KEY_ENV]})
    try:
        res = run_grader(Path(req.root), Path(req.task_dir), req.messages, req.dispatches, req.audit, judge,
                         req.media, req.env_snapshot)
        reply = GraderReply(ok=True, result=res)
    except NoJudgeConfigured as e:
        reply = GraderReply(ok=False, error=str(e), no_judge=True)
    except BaseException as e:  # the grader's own failure
        traceback.print_exc()
        reply = GraderReply(ok=False, error=f"{type(e).__name__}: {e}")
    Path(argv[1]).write_text(reply.model_dump_json(), encoding="utf-8")
    return 0 if reply.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
