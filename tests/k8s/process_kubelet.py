"""A test kubelet that really runs the operator's pods, as local processes.

For each clawkube pod in a namespace: the ConfigMap volumes are written to a scratch folder, emptyDirs made,
every container path under /clawkube remapped into it (other mount points, e.g. a benchmark's /tmp_workspace,
under <scratch>/rootfs; a volume mounted at a second path is a link to its first mount), env resolved (values and Secret keys), the init
containers run, then the main container; its termination-log file becomes the pod's termination message
(status patched to Running, then Succeeded/Failed). Service sidecars are not run (tasks without services).
This exercises the real contract: the operator's pod specs, the bundles, `clawkube pod agent|grade`, the S3
hand-off of the workspace between the two pods and the messages the operator reads back.
"""
from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = "/clawkube"


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


class ProcessKubelet:
    def __init__(self, cluster, timeout: float = 120):
        self.cluster = cluster
        self.timeout = timeout
        self.seen: set[str] = set()
        self.logs: dict[str, str] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="process-kubelet", daemon=True)

    def __enter__(self) -> "ProcessKubelet":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(self.timeout)

    def _loop(self) -> None:
        while not self._stop.wait(0.3):
            try:
                pods = self.cluster.pods()
            except Exception:  # apiserver restarting
                continue
            for pod in pods:
                name = pod["metadata"]["name"]
                if name in self.seen or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                self.seen.add(name)
                try:
                    self._run(pod)
                except Exception as e:  # reported by the test
                    self.errors.append(f"{name}: {type(e).__name__}: {e}")

    def _run(self, pod: dict[str, Any]) -> None:
        name, spec = pod["metadata"]["name"], pod["spec"]
        scratch = Path(tempfile.mkdtemp(prefix=f"kubelet-{name}-"))
        volumes = {v["name"]: v for v in spec["volumes"]}
        first: dict[str, Path] = {}  # volume name -> where it was first mounted

        def mount(container: dict) -> None:
            for m in container.get("volumeMounts", []):
                target = self._map(m["mountPath"], scratch)
                at = first.setdefault(m["name"], target)
                if at != target and not os.path.lexists(target):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.symlink_to(at, target_is_directory=True)
                target.mkdir(parents=True, exist_ok=True)
                cm = volumes[m["name"]].get("configMap")
                if cm:
                    data = self.cluster.core.read_namespaced_config_map(cm["name"], self.cluster.ns)
                    for item in cm.get("items") or [{"key": k, "path": k} for k in (data.binary_data or {})]:
                        (target / item["path"]).write_bytes(base64.b64decode(data.binary_data[item["key"]]))

        started = _now()
        self.cluster._pod_status(name, {"phase": "Running", "startTime": started})
        for c in spec.get("initContainers", []):
            mount(c)
            proc = self._exec(c, scratch, [])
            if proc.returncode != 0:
                raise RuntimeError(f"init container {c['name']} failed: {proc.stderr[-1500:]}")
        main = spec["containers"][0]
        mount(main)
        log = scratch / "termination-log"
        proc = self._exec(main, scratch, ["--termination-log", str(log)])
        self.logs[name] = proc.stdout[-3000:] + proc.stderr[-3000:]
        message = log.read_text() if log.exists() else ""
        now = _now()
        self.cluster._pod_status(name, {
            "phase": "Succeeded" if proc.returncode == 0 else "Failed", "startTime": started,
            "containerStatuses": [{"name": main["name"], "ready": False, "restartCount": 0, "image": main["image"],
                                   "imageID": "", "state": {"terminated": {
                                       "exitCode": proc.returncode, "reason": "Completed" if proc.returncode == 0
                                       else "Error", "message": message[:4096], "startedAt": started,
                                       "finishedAt": now}}}]})
        shutil.rmtree(scratch, ignore_errors=True)

    def _map(self, path: str, scratch: Path) -> Path:
        if path == "/tmp":
            return scratch / "tmp"
        if path.startswith(ROOT):
            return scratch / path[len(ROOT):].lstrip("/")
        assert path.startswith("/"), path
        return scratch / "rootfs" / path.lstrip("/")

    def _exec(self, container: dict, scratch: Path, extra: list[str]) -> subprocess.CompletedProcess:
        env = {k: os.environ[k] for k in ("PATH", "HOME", "PYTHONPATH", "VIRTUAL_ENV") if k in os.environ}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
            else:
                ref = e["valueFrom"]["secretKeyRef"]
                sec = self.cluster.core.read_namespaced_secret(ref["name"], self.cluster.ns)
                env[e["name"]] = base64.b64decode(sec.data[ref["key"]]).decode()
        env["TMPDIR"] = str(scratch / "tmp")
        (scratch / "tmp").mkdir(exist_ok=True)
        mounted = {m["mountPath"] for m in container.get("volumeMounts", [])}
        argv = [str(self._map(a, scratch)) if a.startswith(ROOT) or a in mounted else a for a in container["command"]]
        if argv[0] == "python":
            argv[0] = sys.executable
        return subprocess.run(argv + extra, env=env, capture_output=True, text=True, timeout=self.timeout,
                              cwd=scratch)
