"""A tiny arithmetic evaluator for numeric follow-up questions (no eval of toml text)."""

from __future__ import annotations

import ast
import math
import operator

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.Mod: operator.mod,
}
_FUNCS = {
    "sqrt": math.sqrt,
    "log2": math.log2,
    "ceil": math.ceil,
    "floor": math.floor,
    "min": min,
    "max": max,
}


class ArithmeticError_(ValueError):
    pass


def evaluate(formula: str, names: dict[str, float]) -> float:
    """Evaluate +-*/ // % ** and a few math functions over `names`."""
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError as exc:
        raise ArithmeticError_(f"formula {formula!r} is not valid: {exc.msg}") from None

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ArithmeticError_(f"formula uses unknown name {node.id!r}")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS
        ):
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise ArithmeticError_(f"formula {formula!r}: unsupported expression {ast.dump(node)[:40]}")

    return float(ev(tree))
