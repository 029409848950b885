"""WildClawBench: one Markdown task file per task (load.py); the grader returns `overall_score` (the trial
score) and any criteria; a trial passes at score >= the task's threshold."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...contracts.manifests import GradingManifest
from ...results.model import Score
from ...services.evidence import Evidence
from ...tasks import markdown
from ...tasks.model import TaskLoadError, TaskSpec
from ..base import Benchmark, GradingError
from . import load as loader


class WildClawBench(Benchmark):
    name = loader.NAME
    title = "WildClawBench"
    detect_priority = 90  # every other Markdown task format is asked first: this one takes the rest
    workspace_mount = "/tmp_workspace"

    def detect(self, path: Path) -> bool:
        if path.suffix.lower() != ".md" or not path.is_file():
            return False
        if markdown.read_frontmatter(path) is not None:
            return True
        if path.name.lower() == "readme.md":
            return False
        raise TaskLoadError(path, "frontmatter", "Markdown file has no YAML frontmatter, so it is not a task "
                                                 "(only README.md files may lack one)")

    def load(self, path: Path) -> TaskSpec:
        return loader.load(path)

    def score(self, m: GradingManifest, raw: dict[str, float], evidence: Optional[Evidence]) -> Score:
        if "overall_score" not in raw:
            raise GradingError("grader returned no 'overall_score'")
        criteria = {k: v for k, v in raw.items() if k != "overall_score"}
        s = raw["overall_score"]
        return Score(score=s, passed=s >= m.pass_threshold, criteria=criteria)
