"""The grading process: `python -m clawkube.lifecycle.grader_main REQUEST.json`, or `main([REQUEST.json])` from
`python -c` (how the lifecycle starts it: phases.GRADER_ARGV).

Runs in its own process (the lifecycle enforces the time limit by killing it). Reads the `GradeRequest`, lets
the request's benchmark plugin run the task's grader (`Benchmark.run_grader`: which entry, with which inputs,
and the run's judge: config from the request, key from the environment variable `contracts.judge.KEY_ENV`)
and writes a `GradeOutput` (`ok` + raw `scores`, or the grader's `error`) to the request's output path.
A request naming a `light_grader` (a plugin's standard-library grading module) is handed to its `main` before
anything else is imported: the process starts in a fraction of the time.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    raw = json.loads(Path(argv[0]).read_text())
    if raw.get("light_grader"):
        return importlib.import_module(raw["light_grader"]).main(raw)
    from ..benchmarks import registry
    from ..contracts.grading import GradeOutput, GradeRequest, GraderResult
    from ..contracts.judge import KEY_ENV, Judge
    import traceback

    req = GradeRequest.model_validate(raw)
    try:
        judge = None if req.judge is None else Judge(**req.judge.model_dump(), api_key=os.environ.get(KEY_ENV))
        res = registry.get(req.benchmark).run_grader(req, judge)
        if isinstance(res, GraderResult):  # a plugin that keeps the grader's non-numeric fields
            out = GradeOutput(ok=True, scores=res.scores, details=res.details)
        else:
            out = GradeOutput(ok=True, scores=res)
    except BaseException as e:  # the grader's own failure, reported, never a score
        out = GradeOutput(ok=False, error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
        print(out.traceback, file=sys.stderr)
    Path(req.output_path).write_text(out.model_dump_json())
    return 0 if out.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
