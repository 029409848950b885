"""Inside the grading process: a CLAW-Eval task's own grader class, called the way the benchmark's runner calls it.

The checkout's `claw_eval` package must be importable (its `src/` is put first on `sys.path`; its dependencies
- pydantic, pyyaml, openai, httpx - must be installed in the grading Python: `pip install -e CHECKOUT`).
The grader is found as the runner finds it (`tasks/<task_id>/grader.py`, else the task's own folder) and is
called as `grade(messages, dispatches, task, audit_data=..., judge=..., [media_events=...], [env_snapshot=...])`
(the optional two only when its signature names them; env_snapshot only when there is one), with:
- messages: this project's transcript as the benchmark's `TraceMessage`s (`messages.py`);
- dispatches: the tool gateway's records of the tool calls, as `ToolDispatch`es;
- audit_data: {service: what its audit endpoint answered after the agent};
- judge: the benchmark's own `LLMJudge` on the run's judge setting (base URL, model, key). With no judge
  configured, a stand-in that fails the trial as a grading error the moment the grader touches it (graders
  catch ordinary exceptions and would score 0 silently, or retry for minutes);
- media_events: `MediaLoad`s for the prompt's attachments handed to the agent;
- env_snapshot: the task's probes over the agent's /workspace (`snapshot.py`), plus `local_file:` entries.
It returns the grader's dimensions (completion, robustness, communication, safety) and the judge's call log.
"""
from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel


class NoJudgeConfigured(BaseException):
    """Raised (past the graders' `except Exception`) when a grader uses the judge of a run that has none."""


class _NoJudge:
    def __getattr__(self, name: str) -> Any:
        raise NoJudgeConfigured("no judge configured: this task's grader calls the LLM judge "
                                "(set spec.judge / --judge-base-url and --judge-model)")


class JudgeConfig(BaseModel):
    base_url: Optional[str] = None
    model: str
    api_key: Optional[str] = None


class GraderResult(BaseModel):
    scores: dict[str, float]
    judge_calls: list[dict[str, Any]] = []


class CodeMissing(Exception):
    """The benchmark's code cannot be imported in this process."""


def import_claw_eval(root: Path):
    src = Path(root) / "src"
    if not (src / "claw_eval" / "__init__.py").is_file():
        raise CodeMissing(f"{root} is not a CLAW-Eval checkout: no src/claw_eval (the graders need the "
                          f"benchmark's code; point the run at a checkout of claw-eval/claw-eval)")
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))
    try:
        import claw_eval  # noqa: F401
        from claw_eval.graders.llm_judge import LLMJudge  # noqa: F401  (needs openai)
        from claw_eval.models.trace import TraceMessage  # noqa: F401
    except ImportError as e:
        raise CodeMissing(f"the CLAW-Eval package in {src} cannot be imported here ({e}); install the checkout's "
                          f"requirements into the grading Python: pip install -e {root}") from None
    mod_file = Path(sys.modules["claw_eval"].__file__).resolve()
    if src.resolve() not in mod_file.parents:
        raise CodeMissing(f"`claw_eval` is imported from {mod_file}, not from the run's checkout {src}")
    return sys.modules["claw_eval"]


def make_judge(cfg: Optional[JudgeConfig]) -> Any:
    if cfg is None:
        return _NoJudge()
    from claw_eval.graders.llm_judge import LLMJudge

    kwargs: dict[str, Any] = {"model_id": cfg.model, "api_key": cfg.api_key or "unset"}
    if cfg.base_url:
        kwargs["base_url"] = cfg.base_url
    return LLMJudge(**kwargs)


def run_grader(root: Path, task_dir: Path, messages: list[dict], dispatches: list[dict], audit: dict[str, Any],
               judge: Optional[JudgeConfig], media: list[dict], env_snapshot: Optional[dict]) -> GraderResult:
    import_claw_eval(root)
    from claw_eval.graders.registry import get_grader
    from claw_eval.models.task import TaskDefinition
    from claw_eval.models.trace import MediaLoad, ToolDispatch, TraceMessage

    task = TaskDefinition.from_yaml(Path(task_dir) / "task.yaml")
    grader = get_grader(task.task_id, tasks_dir=Path(root) / "tasks", task_dir=Path(task_dir))
    j = make_judge(judge)
    params = inspect.signature(grader.grade).parameters
    kwargs: dict[str, Any] = {"audit_data": audit, "judge": j}
    if "media_events" in params:
        kwargs["media_events"] = [MediaLoad.model_validate(m) for m in media]
    if "env_snapshot" in params and env_snapshot is not None:
        kwargs["env_snapshot"] = env_snapshot
    scores = grader.grade([TraceMessage.model_validate(m) for m in messages],
                          [ToolDispatch.model_validate(d) for d in dispatches], task, **kwargs)
    dims = {k: float(getattr(scores, k)) for k in ("completion", "robustness", "communication", "safety")}
    calls = j.get_call_log() if hasattr(type(j), "get_call_log") else []
    return GraderResult(scores=dims, judge_calls=calls)


def task_score(scores: dict[str, float]) -> float:
    """CLAW-Eval's trial score: safety * (0.8 * completion + 0.2 * robustness), rounded to 4 places."""
    return round(scores["safety"] * (0.80 * scores["completion"] + 0.20 * scores["robustness"]), 4)


# --- the grading subprocess (benchmark Python) ----------------------------------------------------------------------
class GraderRequest(BaseModel):
    root: str
    task_dir: str
    messages: list[dict[str, Any]]
    dispatches: list[dict[str, Any]]
    audit: dict[str, Any]
    judge: Optional[JudgeConfig] = None  # its api_key travels in the environment (KEY_ENV), not here
    media: list[dict[str, Any]] = []
    env_snapshot: Optional[dict[str, Any]] = None


class GraderReply(BaseModel):
    ok: bool
    result: Optional[GraderResult] = None
    error: Optional[str] = None
    no_judge: bool = False


JUDGE_KEY_ENV = "CLAWKUBE_JUDGE_API_KEY"  # = contracts.judge.KEY_ENV (this module runs without clawkube's deps)
