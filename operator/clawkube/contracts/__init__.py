"""Typed models of what crosses a process boundary: written by one process, read by another.

Writer and reader import the same model, so a renamed or misspelt field fails validation instead of being
silently dropped.
"""
