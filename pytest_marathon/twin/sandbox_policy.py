"""Compile-time policy for service code: what RestrictedPython refuses, plus the twin's own rules.

RestrictedPython already rewrites attribute, item and iteration access into guard calls and refuses
names starting with ``_``. On top of that this policy

* refuses imports outside the allow-list (and relative imports), forbidden builtins (``eval``,
  ``open``, ``globals`` ...) and ``getattr``/``hasattr`` with an underscore name, so hostile code is
  rejected before it ever runs, with the file, line and construct in the reason;
* makes running time countable: every function entry, loop iteration and comprehension item calls
  a budget hook (``_enter_``/``_step_``), and ``def`` bodies are wrapped so recursion depth is known;
* routes the operators that can allocate without bound (``+ * ** << %``) through guards.
"""

from __future__ import annotations

import ast
import re
from typing import ClassVar

from RestrictedPython.transformer import RestrictingNodeTransformer, copy_locations

ALLOWED_MODULES = frozenset(
    {"math", "json", "re", "hashlib", "datetime", "decimal", "collections", "itertools",
     "functools", "string"}
)

# Builtins that would hand out an escape hatch or the host's state; refused by name at compile time.
FORBIDDEN_NAMES = frozenset(
    {"eval", "exec", "compile", "open", "globals", "locals", "vars", "dir", "input", "help",
     "breakpoint", "memoryview", "setattr", "delattr", "exit", "quit", "type", "super", "id",
     "object", "classmethod", "staticmethod", "property", "bytearray"}
)

GUARDED_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "_add_",
    ast.Mult: "_mul_",
    ast.Pow: "_pow_",
    ast.LShift: "_lshift_",
    ast.Mod: "_mod_",
}

# A format width with this many digits or more would build a string beyond any sane size.
HUGE_WIDTH = re.compile(r"\d{6,}")


def _hook(name: str, node: ast.AST) -> ast.Call:
    call = ast.Call(func=ast.Name(name, ast.Load()), args=[], keywords=[])
    copy_locations(call, node)
    ast.fix_missing_locations(call)
    return call


def _hook_stmt(name: str, node: ast.AST) -> ast.Expr:
    stmt = ast.Expr(_hook(name, node))
    copy_locations(stmt, node)
    return stmt


def _is_generator(func: ast.FunctionDef) -> bool:
    """True if ``func`` itself (not a nested function) yields."""
    pending: list[ast.AST] = list(func.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


class ServicePolicy(RestrictingNodeTransformer):
    """RestrictedPython policy with the import allow-list, budget hooks and allocation guards.

    ``importable`` is set per compilation (sibling modules differ per service), see
    :func:`policy_for`.
    """

    importable: ClassVar[frozenset[str]] = ALLOWED_MODULES

    # -- imports -------------------------------------------------------------------------------

    def _check_module(self, node: ast.AST, module: str | None, level: int = 0) -> None:
        if level:
            self.error(node, "relative imports are not allowed; import sibling modules by name")
            return
        root = (module or "").split(".")[0]
        if root not in self.importable:
            allowed = ", ".join(sorted(self.importable))
            self.error(node, f'import of "{module}" is not allowed (allowed: {allowed})')

    def visit_Import(self, node: ast.Import) -> ast.AST:
        for alias in node.names:
            self._check_module(node, alias.name)
        return super().visit_Import(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        self._check_module(node, node.module, node.level)
        return super().visit_ImportFrom(node)

    # -- names and calls -----------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in FORBIDDEN_NAMES:
            self.error(node, f'"{node.id}" is not available in service code')
        return super().visit_Name(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if (isinstance(func, ast.Name) and func.id in {"getattr", "hasattr"} and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and node.args[1].value.startswith("_")):
            self.error(node, f'{func.id}() with the private name "{node.args[1].value}" is not allowed')
        return super().visit_Call(node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        spec = node.format_spec
        if spec is not None:
            parts = spec.values if isinstance(spec, ast.JoinedStr) else [spec]
            for part in parts:
                if not isinstance(part, ast.Constant):
                    self.error(node, "f-string format specs must be constant")
                elif HUGE_WIDTH.search(str(part.value)):
                    self.error(node, f'f-string format width "{part.value}" is too large')
        node = super().visit_FormattedValue(node)
        checked = ast.Call(func=ast.Name("_fmtv_", ast.Load()), args=[node.value], keywords=[])
        copy_locations(checked, node.value)
        copy_locations(checked.func, node.value)
        node.value = checked
        return node

    # -- operators -----------------------------------------------------------------------------

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        node = super().visit_BinOp(node)
        guard = GUARDED_BINOPS.get(type(node.op))
        if guard is None:
            return node
        call = ast.Call(func=ast.Name(guard, ast.Load()), args=[node.left, node.right], keywords=[])
        copy_locations(call, node)
        copy_locations(call.func, node)
        return call

    # -- budget hooks --------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node = super().visit_FunctionDef(node)
        body = node.body
        start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant) else 0
        head, rest = body[:start], body[start:] or [ast.Pass()]
        if _is_generator(node):
            node.body = [*head, _hook_stmt("_step_", node), *rest]
        else:
            guarded = ast.Try(body=rest, handlers=[], orelse=[],
                              finalbody=[_hook_stmt("_leave_", node)])
            copy_locations(guarded, node)
            node.body = [*head, _hook_stmt("_enter_", node), guarded]
        ast.fix_missing_locations(node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node = super().visit_Lambda(node)
        node.body = ast.BoolOp(op=ast.Or(), values=[_hook("_step_", node), node.body])
        copy_locations(node.body, node)
        return node

    def _count_loop(self, node: ast.For | ast.While) -> ast.AST:
        node.body.insert(0, _hook_stmt("_step_", node))
        return node

    def visit_For(self, node: ast.For) -> ast.AST:
        return self._count_loop(super().visit_For(node))

    def visit_While(self, node: ast.While) -> ast.AST:
        return self._count_loop(super().visit_While(node))

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        node = super().visit_comprehension(node)
        tick = ast.UnaryOp(op=ast.Not(), operand=_hook("_step_", node.iter))
        copy_locations(tick, node.iter)
        node.ifs.insert(0, tick)
        return node


def policy_for(importable: frozenset[str]) -> type[ServicePolicy]:
    """A policy class whose import allow-list includes this service's sibling modules."""
    return type("ServicePolicyFor", (ServicePolicy,), {"importable": ALLOWED_MODULES | importable})
