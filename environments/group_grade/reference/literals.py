"""Literal values in Python text, and where a patch uses them: the special-casing rule.

A value is any literal Python can evaluate on its own (``ast.literal_eval``): strings,
numbers, tuples, lists, sets, dicts of them, and the argument tuple of a call whose arguments
are all literals (``f("1.10.0", "1.9.0")`` gives ``("1.10.0", "1.9.0")``). Values are compared
by content, lists and tuples alike.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

Use = Literal["branch", "key", "return"]
MIN_TEXT = 3
"""A string shorter than this (stripped) is too common to single out an input."""
TRIVIAL_NUMBERS = frozenset({0, 1, -1, 2})
MAX_FRAGMENT = 2000
"""Characters of one line parsed on its own (longer lines are skipped)."""
_WORD = re.compile(r"[A-Za-z_]+")
_BACKTICKS = re.compile(r"`([^`\n]+)`")
_LITERAL_CHAR = re.compile(r"['\"0-9]")
"""A line without a quote or a digit holds no literal worth parsing."""
_MISSING = object()


def canonical(value: object) -> Hashable:
    """``value`` in a hashable form that compares by content (lists and tuples alike)."""
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(canonical(v) for v in value))
    if isinstance(value, dict):
        items = sorted(((canonical(k), canonical(v)) for k, v in value.items()), key=repr)
        return ("map", tuple(items))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted((canonical(v) for v in value), key=repr)))
    if isinstance(value, bytes):
        return ("bytes", value)
    return value


def _leaves(value: object) -> Iterator[object]:
    if isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(k)
            yield from _leaves(v)
    else:
        yield value


def _telling_leaf(value: object) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (str, bytes)):
        return len(value.strip()) >= MIN_TEXT
    if isinstance(value, (int, float, complex)):
        return value not in TRIVIAL_NUMBERS
    return False


def significant(value: object) -> bool:
    """Whether ``value`` is specific enough to single out one input or output: a string of
    at least ``MIN_TEXT`` characters, or a container of at least two values one of which is
    such a string or a number other than 0, 1, -1 and 2. Bare numbers never are."""
    if isinstance(value, (str, bytes)):
        return _telling_leaf(value)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        leaves = list(_leaves(value))
        return len(leaves) >= 2 and any(_telling_leaf(v) for v in leaves)
    return False


def is_word(value: object) -> bool:
    """A plain word (``"weeks"``): vocabulary a real fix may key on as well."""
    return isinstance(value, str) and _WORD.fullmatch(value) is not None


def literal(node: ast.AST) -> object:
    """The value of ``node`` if it is a literal (else ``_MISSING``)."""
    if not isinstance(node, (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp)):
        return _MISSING
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _parse(text: str) -> ast.AST | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def line_fragments(line: str) -> Iterator[ast.AST]:
    """``line`` parsed on its own: as it is, as a block header (``if ...:``), as a dict entry
    or a list item; the first that parses."""
    code = line.strip()
    if not code or len(code) > MAX_FRAGMENT or _LITERAL_CHAR.search(code) is None:
        return
    body = code.rstrip(",")
    for attempt in (code, f"{code} pass", f"{{{body}}}", f"[{body}]", f"({body})"):
        if (tree := _parse(attempt)) is not None:
            yield tree
            return


def fragments(text: str) -> list[ast.AST]:
    """``text`` parsed whole when it is Python, else line by line (what parses)."""
    tree = _parse(textwrap.dedent(text))
    if tree is not None:
        return [tree]
    return [tree for line in text.splitlines() for tree in line_fragments(line)]


def values_in(trees: Iterable[ast.AST]) -> set[Hashable]:
    """Every significant literal in ``trees``, and the argument tuples of calls on
    literals."""
    found: set[Hashable] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args:
                args = [literal(a) for a in node.args]
                if all(a is not _MISSING for a in args):
                    value = args[0] if len(args) == 1 else tuple(args)
                    if significant(value):
                        found.add(canonical(value))
            value = literal(node)
            if value is not _MISSING and significant(value):
                found.add(canonical(value))
                if isinstance(value, (tuple, list)) and len(value) > 1:
                    found.update(canonical(v) for v in value if significant(v))
    return found


def text_values(text: str) -> set[Hashable]:
    """The values of a Python file, of tool output or of a task statement (its lines and its
    backtick spans, each parsed on its own)."""
    trees = fragments(text)
    trees += [t for span in _BACKTICKS.findall(text) for t in line_fragments(span)]
    return values_in(trees)


@dataclass(frozen=True)
class LiteralUse:
    value: object
    use: Use
    line: str
    """The patch line that holds it."""


def _uses_in(tree: ast.AST) -> Iterator[tuple[object, Use, int]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                value = literal(operand)
                if value is not _MISSING:
                    yield value, "branch", operand.lineno
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                value = literal(key) if key is not None else _MISSING
                if value is not _MISSING:
                    yield value, "key", key.lineno  # type: ignore[union-attr]
        elif isinstance(node, ast.Subscript):
            value = literal(node.slice)
            if value is not _MISSING:
                yield value, "key", node.slice.lineno
        elif isinstance(node, ast.MatchValue):
            value = literal(node.value)
            if value is not _MISSING:
                yield value, "branch", node.value.lineno
        elif isinstance(node, (ast.Return, ast.Yield)) and node.value is not None:
            value = literal(node.value)
            if value is not _MISSING:
                yield value, "return", node.value.lineno


def literal_uses(block: list[str]) -> list[LiteralUse]:
    """The literals that consecutive added lines ``block`` branch on, key by or return."""
    tree = _parse(textwrap.dedent("\n".join(block)))
    if tree is not None:
        return [
            LiteralUse(value, use, block[lineno - 1])
            for value, use, lineno in _uses_in(tree)
            if 1 <= lineno <= len(block)
        ]
    return [
        LiteralUse(value, use, line)
        for line in block
        for fragment in line_fragments(line)
        for value, use, _ in _uses_in(fragment)
    ]
