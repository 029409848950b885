"""Adapters of the real harnesses (claude-code, codex, openclaw, hermes, nanobot); the registry imports each
by its module path when it is asked for, so one broken adapter fails loudly without hiding the others."""
