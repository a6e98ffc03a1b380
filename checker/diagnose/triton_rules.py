"""The Triton katas' trace checks, added to the engine's (engine.TRACE_RULES) by their mutants
modules (`TRACE_RULES = triton_rules.RULES`).

They read what the sandbox's guard saw of the candidate's kernels on each probe
(checker/sandbox/triton_guard.py, the call's `trace["triton"]`): lanes of a tl.load or
tl.store that fell outside their tensor, with the line, the program and a picture of the
lanes; whether a kernel ran at all and whether PyTorch did the math instead; how many
elements of k a causal call loaded against a full one. Like every trace check these are
evidence from the candidate's own process: each can only name a mistake the code shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attnkata.checker.messages import msg
from attnkata.checker.models import SourceRef
from attnkata.checker.probes import TORCH_MATH_OPS

if TYPE_CHECKING:
    from attnkata.checker.diagnose.engine import Engine
    from attnkata.checker.diagnose.inputs import Probe
    from attnkata.checker.diagnose.subjects import Observed

_SIDES = ("after", "before", "outside")  # outside the tensor's span; "gap": inside it, between rows


def _report(c: Observed) -> dict[str, Any] | None:
    return c.trace.get("triton") if c.ok else None


def kernel_bounds(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    """A tl.load (tl.store) lane past the start or end of its tensor: `missing-load-mask`
    (`missing-store-mask`), pointing at the line. Lanes in the padding between a strided
    view's rows are the address computation's business (`stride-assumed-contiguous`, which
    the probes' values decide), not a mask's."""
    report = _report(c)
    for ev in (report or {}).get("outside", []):
        if ev.get("region") not in _SIDES:
            continue
        mid = "missing-load-mask" if ev["op"] == "load" else "missing-store-mask"
        if not e.applies(mid):
            continue
        line = ev.get("line")
        tensor = ev.get("tensor") or "?"
        label = (
            e.say("diag.paren", text=e._arg_name(p.entry, ev["label"])) if ev.get("label") else ""
        )
        program = tuple(ev.get("program") or ())
        text = e.evidence(
            "trace.kernel_outside",
            p,
            op=ev["op"],
            line=line if line else "?",
            verb=e.say("trace.kernel.read" if ev["op"] == "load" else "trace.kernel.wrote"),
            lanes=ev.get("lanes", 0),
            side=e.say(f"trace.kernel.{ev['region']}"),
            tensor=tensor,
            label=label,
            program=program,
        )
        if not ev.get("masked", True):
            text += e.say("trace.kernel.unmasked")
        f = e.findings.add(
            mid,
            2,
            text,
            source=[SourceRef(line, text=_line(e, line))] if line else [],
            params={"tensor": f"`{tensor}`"},
            probe=p,
        )
        if "mask_expected" not in f.data:
            f.data.update(_lane_picture(ev, e.lang, tensor))
    return False


def torch_math(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    """No kernel ran, or PyTorch computed the result in the wrapper."""
    if not c.ok or not e.applies("torch-instead-of-triton"):
        return False
    report = _report(c) or {}
    ops = sorted(
        {
            name
            for op in c.trace.get("ops", {})
            if (name := op.split("::")[-1].split(".")[0]) in TORCH_MATH_OPS
        }
    )
    if report.get("launches") and not ops:
        return False
    text = (
        e.evidence("trace.kernel_torch_math", p, ops=", ".join(ops))
        if ops
        else e.evidence("trace.kernel_no_launch", p)
    )
    e.findings.add(
        "torch-instead-of-triton", 2, text, params={"ops": ", ".join(ops) or "-"}, probe=p
    )
    return False


def causal_skip(e: Engine, p: Probe, c: Observed, r: Observed | None) -> bool:
    """A causal probe (params `full_probe`: the same call without is_causal) whose kernel
    loaded as many elements of k as the full one, with several query blocks per head:
    fully masked key blocks were visited (informative: the values are right)."""
    full_name = p.params.get("full_probe")
    if not full_name or not e.applies("causal-blocks-not-skipped") or e.spec is None:
        return False
    names = [q.name for q in e.spec.probes]
    if full_name not in names or names.index(full_name) >= len(e.cand_obs):
        return False
    full = e.cand_obs[names.index(full_name)]
    causal_report, full_report = _report(c), _report(full)
    if not causal_report or not full_report or (r is not None and not e._values_match(c, r)):
        return False
    key = p.params.get("k_label", "argument 1")
    causal_loads = causal_report.get("loaded", {}).get(key, 0)
    full_loads = full_report.get("loaded", {}).get(key, 0)
    heads = int(p.params.get("B", 1)) * int(p.params.get("H", 1))
    grids = causal_report.get("grids") or [[]]
    programs = 1
    for g in grids[0]:
        programs *= max(int(g), 1)
    blocks = programs // max(heads, 1)
    if full_loads and causal_loads >= full_loads and blocks >= 2:
        f = e.findings.add(
            "causal-blocks-not-skipped",
            2,
            e.evidence(
                "trace.kernel_causal_loads", p, causal=causal_loads, full=full_loads, blocks=blocks
            ),
            probe=p,
        )
        f.severity = "informative"
    return False


RULES = (kernel_bounds, torch_math, causal_skip)


def _line(e: Engine, line: int | None) -> str:
    lines = e.src.lines
    return lines[line - 1].strip() if line and 0 < line <= len(lines) else ""


def _lane_picture(ev: dict[str, Any], lang: str, tensor: str) -> dict[str, Any]:
    """The access's lanes as two grids (the renderers' mask grids): expected = active lanes
    inside the tensor, yours = every active lane; a cell covers a block of lanes."""
    outside, active = ev.get("lane_map") or [], ev.get("active_map") or []
    if not outside or len(outside) != len(active):
        return {}
    expected = [
        [bool(a) and not bool(o) for a, o in zip(ra, ro, strict=False)]
        for ra, ro in zip(active, outside, strict=True)
    ]
    got = [[bool(a) for a in row] for row in active]
    shape = ev.get("shape") or []
    lanes = 1
    for n in shape:
        lanes *= max(int(n), 1)
    cells = sum(len(row) for row in active) or 1
    caption = {
        code: msg(
            "grid.lanes",
            code,
            op=ev.get("op", "load"),
            line=ev.get("line") or "?",
            program=tuple(ev.get("program") or ()),
            shape=" x ".join(str(n) for n in shape) or "?",
            cell=max(1, lanes // cells),
            tensor=tensor,
        )
        for code in ("en", "zh")
    }
    return {"mask_expected": expected, "mask_got": got, "grid_caption": caption}
