"""Generate the CRDs (apiextensions.k8s.io/v1, structural schemas) from the pydantic models.

    python -m clawkube.k8s.crdgen crds/     # writes benchmarkruns.yaml and tasktrials.yaml

Pydantic's JSON Schema is rewritten into the OpenAPI v3 subset Kubernetes accepts: `$ref`s inlined,
`Optional[X]` -> `nullable`, `Any` -> `x-kubernetes-preserve-unknown-fields`, `const` -> `enum`,
numeric `exclusiveMinimum` -> boolean form, no titles/defaults (pydantic applies the defaults).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from ..runspec import BenchmarkRunSpec
from .model import GROUP, RUNS, TRIALS, VERSION, RunStatus, TaskTrialSpec, TrialStatus

_KEEP = {"type", "properties", "items", "required", "enum", "minimum", "maximum", "minLength", "maxLength",
         "pattern", "minItems", "maxItems", "format", "description"}


def structural(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return _convert(schema, schema.get("$defs", {}))


def _convert(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        return _convert(defs[node["$ref"].split("/")[-1]], defs)
    variants = node.get("anyOf") or node.get("oneOf")
    if variants:
        non_null = [v for v in variants if v.get("type") != "null"]
        if len(non_null) != 1:
            return {"x-kubernetes-preserve-unknown-fields": True}
        out = _convert(non_null[0], defs)
        if len(non_null) < len(variants):
            out["nullable"] = True
        return out
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out["properties"] = {k: _convert(v, defs) for k, v in value.items()}
        elif key == "items":
            out["items"] = _convert(value, defs)
        elif key == "additionalProperties":
            if isinstance(value, dict) and value and "properties" not in node:
                out["additionalProperties"] = _convert(value, defs)
        elif key == "const":
            out["enum"] = [value]
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True
        elif key in _KEEP:
            out[key] = value
    if "type" not in out:
        if "properties" in out:
            out["type"] = "object"
        elif "enum" in out:
            out["type"] = "string" if all(isinstance(v, str) for v in out["enum"]) else "integer"
        else:
            return {"x-kubernetes-preserve-unknown-fields": True, **({"nullable": True} if out.get("nullable") else {})}
    if out["type"] == "object" and "properties" not in out and "additionalProperties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    if out.get("required") == []:
        del out["required"]
    return out


def _column(name: str, path: str, typ: str = "string", priority: int = 0, description: str = "") -> dict:
    col = {"name": name, "type": typ, "jsonPath": path}
    if priority:
        col["priority"] = priority
    if description:
        col["description"] = description
    return col


def _crd(plural: str, kind: str, short: list[str], spec: type[BaseModel], status: type[BaseModel],
         columns: list[dict]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "shortNames": short,
                      "categories": ["clawkube"]},
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": structural(spec),
                        "status": structural(status),
                    },
                }},
            }],
        },
    }


def benchmarkrun_crd() -> dict[str, Any]:
    return _crd(RUNS, "BenchmarkRun", ["bench", "br"], BenchmarkRunSpec, RunStatus, [
        _column("Phase", ".status.phase"),
        _column("Done", ".status.progress", description="finished trials / total"),
        _column("Succeeded", ".status.counts.succeeded", "integer"),
        _column("Failed", ".status.counts.failed", "integer"),
        _column("Mean", ".status.meanScore", "number", description="mean score over graded trials"),
        _column("Agent", ".spec.agent.harness", priority=1),
        _column("Model", ".spec.agent.model", priority=1),
        _column("Modes", ".spec.modes", priority=1, description="EvoClawBench modes (empty: spec.mode)"),
        _column("Age", ".metadata.creationTimestamp", "date"),
    ])


def tasktrial_crd() -> dict[str, Any]:
    return _crd(TRIALS, "TaskTrial", ["trial", "tt"], TaskTrialSpec, TrialStatus, [
        _column("Run", ".spec.run"),
        _column("Task", ".spec.taskId"),
        _column("Trial", ".spec.trialIndex", "integer"),
        _column("Mode", ".spec.mode", priority=1),
        _column("State", ".status.state"),
        _column("Phase", ".status.phase"),
        _column("Attempt", ".status.attempt", "integer"),
        _column("Score", ".status.score.score", "number"),
        _column("Error", ".status.errorKind", priority=1),
        _column("Age", ".metadata.creationTimestamp", "date"),
    ])


class _NoAliases(yaml.SafeDumper):
    """Writes a shared schema part out each time it occurs (no YAML anchors: plain for readers and tools)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(crd: dict[str, Any]) -> str:
    header = "# Generated by `python -m clawkube.k8s.crdgen crds/` from the pydantic models; do not edit.\n"
    return header + yaml.dump(crd, Dumper=_NoAliases, sort_keys=False, width=120)


def write_all(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for crd in (benchmarkrun_crd(), tasktrial_crd()):
        path = folder / f"{crd['spec']['names']['plural']}.yaml"
        path.write_text(render(crd))
        out.append(path)
    return out


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1] if len(sys.argv) > 1 else "crds")):
        print(p)
