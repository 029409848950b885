"""CLAW-Eval as a clawkube benchmark plugin (`PLUGIN`).

`PLUGIN` is built on first access, so the modules that run under the benchmark's own Python (usersim,
grade_main) import this package without the rest of clawkube.
"""


def __getattr__(name: str):
    if name == "PLUGIN":
        from .plugin import ClawEval

        plugin = ClawEval()
        globals()["PLUGIN"] = plugin
        return plugin
    raise AttributeError(name)
