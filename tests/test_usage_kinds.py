"""Tool calls by kind (the per-trial numbers WildClawBench reports): usage.json, the run summary, the report,
and the Prometheus counter."""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from clawkube.agents.transcript import TranscriptEvent, total_usage
from clawkube.k8s.metrics import Metrics
from clawkube.results.model import Usage
from clawkube.reporting.report import render
from clawkube.reporting.summary import summarize

from tests.test_summary import tr


def test_total_usage_counts_tool_calls_by_kind():
    events = [TranscriptEvent(type="tool_call", tool=t) for t in ("Bash", "Write", "Bash", "WebFetch", "mcp__mail__send",
                                                                   "Mystery")]
    u = total_usage(events, {"Bash": "exec", "Write": "write", "WebFetch": "web"})
    assert u.tool_calls == 6
    assert u.tool_calls_by_kind == {"exec": 2, "write": 1, "web": 1, "mcp": 1, "other": 1}


def test_usage_adds_kinds_and_the_summary_and_report_show_them():
    a = Usage(tool_calls=3, tool_calls_by_kind={"exec": 2, "write": 1}, wall_seconds=10)
    b = Usage(tool_calls=1, tool_calls_by_kind={"exec": 1}, wall_seconds=20)
    assert a.add(b).tool_calls_by_kind == {"exec": 3, "write": 1}
    s = summarize([tr("a1", 0, 1.0, usage=a), tr("a1", 1, 0.0, usage=b)], trials_per_task=2)
    assert s.usage_end_to_end.total.tool_calls_by_kind == {"exec": 3, "write": 1}
    assert s.usage_end_to_end.mean_per_trial.tool_calls_by_kind == {"exec": 1.5, "write": 0.5}
    text = render(s)
    assert "exec 3, write 1" in text and "exec 1.5, write 0.5" in text


def test_metrics_have_a_tool_call_counter_by_kind():
    reg = CollectorRegistry()
    m = Metrics(reg)
    m.tool_calls.labels("ns", "run", "exec").inc(2)
    assert reg.get_sample_value("clawkube_tool_calls_total", {"namespace": "ns", "run": "run", "kind": "exec"}) == 2
