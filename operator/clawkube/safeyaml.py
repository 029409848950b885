"""YAML with input limits, for every file a user or a task hands us (run.yaml, task frontmatter, task.yaml).

PyYAML's safe loader builds shared nodes for aliases, so a "billion laughs" file of a few hundred bytes becomes a
structure with billions of leaves as soon as anything walks it (validation, JSON dumps): minutes of CPU and
gigabytes of memory; and libyaml (CSafeLoader) crashes the whole process on a few tens of thousands of nesting
levels. Here the document is refused before that: at most MAX_BYTES of text, MAX_NODES nodes (aliased nodes counted
at every use, i.e. the size the document expands to) and MAX_DEPTH levels of nesting (+ MAX_ALIASES alias uses on
the pure-Python path). libyaml is used (10x faster) only for text whose nesting is bounded well below its crash. Errors are `YAMLLimitError`, a `yaml.YAMLError`, so callers' existing handlers report them.
"""
from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

MAX_BYTES = 4 * 1024 * 1024
MAX_ALIASES = 1000
MAX_NODES = 200_000
MAX_DEPTH = 100


class YAMLLimitError(yaml.YAMLError):
    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = None


class _Loader(yaml.SafeLoader):
    def __init__(self, stream):
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YAMLLimitError(f"more than {MAX_ALIASES} aliases")
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise YAMLLimitError(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _check_size(root: Node) -> None:
    """Count nodes as the document expands (an alias counts its whole subtree again), without expanding it."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()  # nodes whose subtree is being counted: meeting one again is a cycle
    stack: list[tuple[Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            raise YAMLLimitError(f"nested deeper than {MAX_DEPTH} levels")
        if id(node) in sizes:
            continue
        kids: list[Node] = []
        if isinstance(node, SequenceNode):
            kids = list(node.value)
        elif isinstance(node, MappingNode):
            kids = [n for kv in node.value for n in kv]
        if not done:
            if id(node) in open_:
                raise YAMLLimitError("a recursive alias (a node that contains itself)")
            open_.add(id(node))
            stack.append((node, depth, True))
            stack.extend((k, depth + 1, False) for k in kids if id(k) not in sizes)
            continue
        open_.discard(id(node))
        total = 1 + sum(sizes.get(id(k), 1) for k in kids)
        if total > MAX_NODES:
            raise YAMLLimitError(f"expands to more than {MAX_NODES} nodes (aliases of aliases?)")
        sizes[id(node)] = total


_CLoader = getattr(yaml, "CSafeLoader", None)
C_DEPTH_BOUND = 5000  # libyaml's composer recurses in C: ~30,000 levels crash the process (segfault)


def _c_safe(text: str) -> bool:
    """Can libyaml compose this without recursing too deep? Nesting comes from flow brackets and from block
    structure, which cannot nest deeper than a line is long (indentation, compact `- - -`)."""
    brackets = text.count("[") + text.count("{")
    longest = max((len(line) for line in text.splitlines()), default=0)
    return brackets + longest <= C_DEPTH_BOUND


def load(text: str) -> Any:
    """yaml.safe_load with the limits above (libyaml when it is there and the text is shallow enough for it)."""
    if len(text) > MAX_BYTES:
        raise YAMLLimitError(f"larger than {MAX_BYTES} bytes")
    loader = _CLoader(text) if _CLoader is not None and _c_safe(text) else _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node)
        return loader.construct_document(node)
    except RecursionError:  # PyYAML's composer recurses once per nesting level
        raise YAMLLimitError(f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
