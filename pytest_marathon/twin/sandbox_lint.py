"""Pyflakes-grade checks on service sources (syntax, undefined names, unused imports).

What a CI lint step would catch before an image is built; the sandbox's own refusals are added by
``sandbox.lint``. Names are resolved against the sandbox's builtins, not the host's, so code that
relies on ``open`` or ``type`` is reported as using an undefined name.
"""

from __future__ import annotations

import ast
import symtable

from pytest_marathon.twin.sandbox_guards import Budget, Guards, build_builtins

SANDBOX_BUILTINS = frozenset(
    name for name in build_builtins(Guards(Budget()), str, str) if not name.startswith("_")
) | {"print", "__name__"}


def _first_lines(tree: ast.AST) -> dict[str, int]:
    lines: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            lines[node.id] = min(lines.get(node.id, node.lineno), node.lineno)
    return lines


def _tables(table: symtable.SymbolTable) -> list[symtable.SymbolTable]:
    found = [table]
    for child in table.get_children():
        found.extend(_tables(child))
    return found


def _module_names(module: symtable.SymbolTable) -> set[str]:
    defined = set(SANDBOX_BUILTINS)
    for table in _tables(module):
        for symbol in table.get_symbols():
            at_module = table is module or symbol.is_declared_global()
            if at_module and (symbol.is_assigned() or symbol.is_imported()
                              or symbol.is_namespace()):
                defined.add(symbol.get_name())
    return defined


def _undefined(module: symtable.SymbolTable, tree: ast.AST, filename: str) -> list[str]:
    defined = _module_names(module)
    lines = _first_lines(tree)
    problems: set[tuple[int, str]] = set()
    for table in _tables(module):
        for symbol in table.get_symbols():
            name = symbol.get_name()
            if not symbol.is_referenced() or name in defined:
                continue
            if table is module or symbol.is_global():
                problems.add((lines.get(name, 0), name))
    return [f"{filename}:{line}: undefined name '{name}'" for line, name in sorted(problems)]


def _unused_imports(tree: ast.Module, filename: str) -> list[str]:
    used = {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    problems = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound not in used:
                    problems.append(f"{filename}:{node.lineno}: '{alias.name}' imported but "
                                    "unused")
    return problems


def lint_sources(service: str, sources: dict[str, str]) -> list[str]:
    """Lint every module of a service; messages are ``service/file.py:line: problem``."""
    problems: list[str] = []
    for module in sorted(sources):
        filename = f"{service}/{module}.py"
        try:
            tree = ast.parse(sources[module], filename)
            table = symtable.symtable(sources[module], filename, "exec")
        except SyntaxError as exc:
            problems.append(f"{filename}:{exc.lineno}: syntax error: {exc.msg}")
            continue
        problems.extend(_undefined(table, tree, filename))
        problems.extend(_unused_imports(tree, filename))
    return problems
