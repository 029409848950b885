"""The benchmark registry: the built-in plugins plus any registered at run time.

`BUILTIN` lists the modules of the built-in plugins; each exposes `PLUGIN`, a `Benchmark` instance. A plugin
that cannot be imported or is not a valid `Benchmark` is never silently dropped: every lookup raises
`BrokenPlugin` naming the module and the cause (a broken WildClawBench plugin must not turn its tasks into
"not a task"). Adding a benchmark = one new module (or package) + one line here + its tests.
"""
from __future__ import annotations

import importlib
import importlib.util
import threading
from pathlib import Path
from typing import Optional

from .base import Benchmark

BUILTIN: tuple[str, ...] = (
    "clawkube.benchmarks.wildclaw",
    "clawkube.benchmarks.claweval",
    "clawkube.benchmarks.evoclaw",
)

_lock = threading.Lock()
_plugins: Optional[dict[str, Benchmark]] = None
_extra: list[Benchmark] = []


class BrokenPlugin(RuntimeError):
    """A benchmark plugin module failed to import or does not provide a valid `PLUGIN`."""


class UnknownBenchmark(KeyError):
    def __init__(self, name: str, known: list[str]):
        self.name = name
        super().__init__(f"no benchmark plugin named {name!r} (known: {', '.join(known) or 'none'})")

    def __str__(self) -> str:
        return self.args[0]


def _check(plugin: object, where: str) -> Benchmark:
    if not isinstance(plugin, Benchmark):
        raise BrokenPlugin(f"{where}: PLUGIN is {type(plugin).__name__}, not a clawkube.benchmarks.base.Benchmark")
    for attr in ("name", "title"):
        if not isinstance(getattr(plugin, attr, None), str) or not getattr(plugin, attr):
            raise BrokenPlugin(f"{where}: plugin has no {attr}")
    return plugin


def _import(module: str) -> Benchmark:
    try:
        mod = importlib.import_module(module)
    except Exception as e:
        raise BrokenPlugin(f"benchmark plugin {module} cannot be imported: {type(e).__name__}: {e}") from e
    if not hasattr(mod, "PLUGIN"):
        raise BrokenPlugin(f"benchmark plugin {module} defines no PLUGIN")
    return _check(mod.PLUGIN, f"benchmark plugin {module}")


def _add(found: dict[str, Benchmark], plugin: Benchmark, where: str) -> None:
    if plugin.name in found and found[plugin.name] is not plugin:
        raise BrokenPlugin(f"{where}: benchmark name {plugin.name!r} is already taken by {found[plugin.name]!r}")
    found[plugin.name] = plugin


def _load() -> dict[str, Benchmark]:
    global _plugins
    with _lock:
        if _plugins is None:
            found: dict[str, Benchmark] = {}
            problems: list[str] = []
            for module in BUILTIN:
                try:
                    _add(found, _import(module), module)
                except BrokenPlugin as e:
                    problems.append(str(e))
            if problems:
                raise BrokenPlugin("; ".join(problems))
            for plugin in _extra:
                _add(found, plugin, "register()")
            _plugins = found
        return _plugins


def register(plugin: Benchmark) -> Benchmark:
    """Add a plugin (e.g. a benchmark outside this repository). Its name must be new."""
    _check(plugin, "register()")
    with _lock:
        _extra.append(plugin)
    if _plugins is not None:
        _add(_plugins, plugin, "register()")
    return plugin


def unregister(name: str) -> None:
    """Remove a plugin added with `register` (tests); built-in plugins stay."""
    with _lock:
        gone = [p for p in _extra if p.name == name]
        _extra[:] = [p for p in _extra if p.name != name]
        if _plugins is not None and any(_plugins.get(name) is p for p in gone):
            del _plugins[name]


def reset() -> None:
    """Forget what was loaded (tests that break a plugin on purpose)."""
    global _plugins
    with _lock:
        _plugins = None


def all_benchmarks() -> list[Benchmark]:
    """Every plugin, in detection order (priority, then name)."""
    return sorted(_load().values(), key=lambda p: (p.detect_priority, p.name))


def names() -> list[str]:
    return [p.name for p in all_benchmarks()]


def get(name: str) -> Benchmark:
    plugins = _load()
    if name not in plugins:
        raise UnknownBenchmark(name, sorted(plugins))
    return plugins[name]


def detect(path: Path) -> Optional[Benchmark]:
    """The plugin whose `detect` claims `path` first (in priority order), or None when none does."""
    for plugin in all_benchmarks():
        if plugin.detect(Path(path)):
            return plugin
    return None


def missing_requirements(benchmarks: list[str]) -> list[str]:
    """One line per module a benchmark's graders import (`grader_requirements`) that this Python cannot find."""
    out = []
    for name in benchmarks:
        plugin = get(name)
        for module in plugin.grader_requirements:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                package = plugin.grader_packages.get(module)
                out.append(f"{plugin.title} graders need the Python module '{module}', which is not installed"
                           + (f" (pip install {package})" if package else ""))
    return out
