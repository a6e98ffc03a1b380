"""What a static-policy finding costs in a graded problem set.

The sandbox holds whatever a file imports, so a graded set runs a file the policy flags
(`import os`, `torch._C`, ...) like any other: its attention mistake is still diagnosed and
the student sees both. What the finding costs is the instructor's choice, the manifest's
`grading.policy`:

- `"flag"` (the default): reported, no points taken;
- `"penalty:<fraction>"`: the file's score times (1 - fraction);
- `"zero"`: the file earns nothing and fails.

A finding that reaches a fused attention kernel (`torch.ops.aten._scaled_dot_product_*`,
`torch._C._nn.scaled_dot_product_attention`, ...) is the kata's one ban, not a style
question: it costs everything whatever the manifest says. (The public kernels are not policy
findings: the sandbox makes them fail when called, so the tests that use them fail.)
"""

from __future__ import annotations

import re
from typing import Any

from attnkata.checker import policy as rules
from attnkata.checker.messages import msg
from attnkata.checker.models import FAIL, PASS, Result
from attnkata.checker.sets.manifest import parse_policy

ZERO, PENALTY = "zero", "penalty"
# Names of the fused attention kernels in any spelling a policy finding can show.
_FUSED = re.compile(
    r"scaled_dot_product|flash_attention|efficient_attention|multi_head_attention|"
    r"flex_attention|MultiheadAttention|cudnn_attention|_fused_sdp",
    re.IGNORECASE,
)


def _reaches_fused_kernel(source: str, allow_imports: tuple[str, ...]) -> list[rules.Finding]:
    try:
        found = rules.scan_source(source, allow_imports)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [f for f in found if _FUSED.search(f.what)]


def apply(result: Result, spec: str, allow_imports: tuple[str, ...], lang: str) -> None:
    """Say, in each policy diagnostic of `result` (graded with the policy only reporting),
    what it costs in this set; a zero cost fails the file. Records the cost in the
    diagnostic's data (`policy_cost`), which `factor` reads when the score is computed."""
    found = [d for d in result.diagnostics if d.id in rules.POLICY_IDS]
    if not found:
        return
    kind, fraction = parse_policy(spec)
    banned = _reaches_fused_kernel(result.graded_source or "", allow_imports)
    if banned:
        kind, fraction = ZERO, 1.0
    warned = msg("policy_warn", lang)
    for d in found:
        text = d.explanation.removesuffix(warned).rstrip()
        if banned:
            note = msg("grade.policy_cost.banned", lang, what=banned[0].what, line=banned[0].line)
        elif kind == PENALTY:
            note = msg("grade.policy_cost.penalty", lang, pct=f"{fraction:.0%}")
        else:
            note = msg(f"grade.policy_cost.{kind}", lang)
        d.explanation = f"{text} {note}"
        d.severity = "essential" if kind == ZERO else "actionable"
        d.data = {**d.data, "policy": spec, "policy_cost": fraction}
    if kind == ZERO and result.status == PASS:
        result.status = FAIL


def factor(result: dict[str, Any]) -> float:
    """What a graded file keeps of its score after its policy findings (1.0: nothing taken)."""
    costs = [
        float((d.get("data") or {}).get("policy_cost", 0.0))
        for d in result.get("diagnostics", [])
        if d.get("id") in rules.POLICY_IDS
    ]
    return 1.0 - max(costs, default=0.0)


def note(result: dict[str, Any], lang: str) -> str | None:
    """A short line for the gradebook's notes: which findings, and what they cost."""
    ids = [d["id"] for d in result.get("diagnostics", []) if d.get("id") in rules.POLICY_IDS]
    if not ids:
        return None
    kept = factor(result)
    cost = (
        msg("grade.policy_note.flag", lang)
        if kept >= 1.0
        else msg("grade.policy_note.zero", lang)
        if kept <= 0.0
        else msg("grade.policy_note.penalty", lang, pct=f"{1.0 - kept:.0%}")
    )
    return msg("grade.policy_note", lang, ids=", ".join(ids), cost=cost)
