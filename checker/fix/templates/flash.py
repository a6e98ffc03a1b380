"""FlashAttention repairs: the online softmax's running state (its max, sum and accumulator),
empty tiles, the short last tile, and the backward pass's delta term, lse and transposes."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from attnkata.checker.catalog import Kata
from attnkata.checker.fix.site import Candidate, Site, arg, callee, code_of, receiver
from attnkata.checker.fix.templates import template
from attnkata.checker.fix.templates.kernels import in_kernel
from attnkata.checker.models import Diagnostic

ZEROS = ("zeros", "zeros_like", "new_zeros")


def _updates(site: Site) -> list[tuple[cst.Assign, str, cst.BaseExpression, cst.BaseExpression]]:
    """`x = <factor> * x + <new>` / `x = x * <factor> + <new>` / `x = x + <new>`: (assign, x,
    factor or the name itself when there is none, new)."""
    out = []
    for asg in site.nodes(cst.Assign):
        target = asg.targets[0].target
        value = asg.value
        if not isinstance(target, cst.Name) or not isinstance(value, cst.BinaryOperation):
            continue
        if not isinstance(value.operator, cst.Add):
            continue
        left = value.left
        if isinstance(left, cst.Name) and left.value == target.value:
            out.append((asg, target.value, left, value.right))
        elif isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Multiply):
            for mine, factor in ((left.left, left.right), (left.right, left.left)):
                if isinstance(mine, cst.Name) and mine.value == target.value:
                    out.append((asg, target.value, factor, value.right))
    return out


def _squeezed(site: Site, factor: cst.BaseExpression) -> list[str]:
    """The factor as written, without a trailing unsqueeze(-1) / [..., None], and with one."""
    code = site.code(factor)
    out = [code]
    if (
        isinstance(factor, cst.Call)
        and callee(factor) == "unsqueeze"
        and (rec := receiver(factor)) is not None
    ):
        out.append(site.code(rec))
    elif isinstance(factor, cst.Subscript) and code.endswith((", None]", ",None]")):
        out.append(site.code(factor.value))
    else:
        out.append(f"{code}[..., None]")
    return out


def _rescale(site: Site) -> Iterator[Candidate]:
    """The accumulator (or the running sum) left unscaled: it gets the factor the other one
    already has."""
    ups = _updates(site)
    scaled = [u for u in ups if not (isinstance(u[2], cst.Name) and u[2].value == u[1])]
    plain = [u for u in ups if isinstance(u[2], cst.Name) and u[2].value == u[1]]
    for asg, name, _, new in plain[:3]:
        for _, _, factor, _ in scaled[:2]:
            for f in _squeezed(site, factor):
                yield Candidate(
                    site.replace(asg.value, f"{f} * {name} + {site.code(new)}"),
                    f"{name} rescaled by {f}",
                )


@template("online-softmax-no-rescale", "online-softmax-sum-not-rescaled")
def rescale(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    yield from _rescale(site)


def _exp_guards(site: Site) -> list[tuple[cst.BaseExpression, str]]:
    """exp(a - m): m made finite (a tile with no allowed key has m = -inf: -inf - -inf)."""
    out = []
    for call in site.calls("exp", "exp2"):
        a = arg(call, 0, "input", "x")
        if (
            a is not None
            and isinstance(a.value, cst.BinaryOperation)
            and isinstance(a.value.operator, cst.Subtract)
            and not in_kernel(site, call)  # torch cannot be called there: kernels.py's guard
        ):
            m = a.value.right
            out.append((m, f"torch.nan_to_num({site.code(m)}, neginf=0.0)"))
    return out


@template("flash-empty-block-nan")
def empty_tile(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    guards = _exp_guards(site)
    if guards:
        yield Candidate(site.replace_all(guards), "every exp's max made finite")
    for g in guards[:3]:
        yield Candidate(site.replace(*g), "the exp's max made finite")


def _running_max_inits(site: Site) -> list[cst.Call]:
    """zeros(...) assigned to a name that later goes into maximum(...) / max(...)."""
    maxed = set()
    for call in site.calls("maximum", "max", "fmax"):
        for a in call.args:
            if isinstance(a.value, cst.Name):
                maxed.add(a.value.value)
    out = []
    for asg in site.nodes(cst.Assign):
        names = [site.code(t.target) for t in asg.targets]
        value = asg.value
        if (
            isinstance(value, cst.Call)
            and callee(value) in ZEROS
            and any(n in maxed for n in names)
        ):
            out.append(value)
    return out


@template("flash-max-init-zero")
def max_init(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The running max starts at -inf (and the exps of a still-empty row are guarded)."""
    for call in _running_max_inits(site)[:2]:
        new = f"torch.full_like({site.code(call)}, float('-inf'))"
        yield Candidate(site.replace(call, new), "running max starts at -inf")
        yield Candidate(
            site.replace_all([(call, new), *_exp_guards(site)]),
            "running max starts at -inf, exps guarded",
        )


def _ceil_divisions(site: Site) -> list[tuple[cst.BinaryOperation, str]]:
    return [
        (n, f"-(-{site.code(n.left)} // {site.code(n.right)})")
        for n in site.nodes(cst.BinaryOperation, lambda n: isinstance(n.operator, cst.FloorDivide))
        if not isinstance(n.right, cst.Integer)
    ]


@template("flash-tail-block-dropped", "last-block-dropped")
def tail_tile(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """The short last tile counts: the number of tiles rounds up (and a tile's own length,
    not the block size, sizes what is allocated for it)."""
    ceil = _ceil_divisions(site)
    if ceil:
        yield Candidate(site.replace_all(ceil), "the number of tiles rounded up")
        for c in ceil[:2]:
            yield Candidate(site.replace(*c), "the number of tiles rounded up")
        sized = _tile_sizes(site)
        if sized:
            yield Candidate(
                site.replace_all(ceil + sized), "tiles rounded up, sized by their own length"
            )
    for call in site.calls("range"):
        args = [a.value for a in call.args]
        if (
            len(args) == 3
            and isinstance(args[1], cst.BinaryOperation)
            and isinstance(args[1].operator, cst.Subtract)
        ):
            yield Candidate(
                site.replace(args[1], site.code(args[1].left)), "the range reaches the end"
            )


def _tile_sizes(site: Site) -> list[tuple[cst.CSTNode, str]]:
    """Allocations sized by the block (Br) inside a loop over tiles: sized by the tile (Qi)
    instead, `Qi.shape[-2]`, the tile being a slice of an input taken in the same loop."""
    tiles: dict[cst.CSTNode, str] = {}
    for asg in site.nodes(cst.Assign):
        if isinstance(asg.value, cst.Subscript) and isinstance(asg.targets[0].target, cst.Name):
            loop = next((a for a in site.ancestors(asg) if isinstance(a, cst.For)), None)
            if loop is not None and loop not in tiles:
                tiles[loop] = asg.targets[0].target.value
    blocks = {
        "Br",
        "Bc",
        "block_q",
        "block_k",
        "bq",
        "bk",
        "BLOCK_M",
        "BLOCK_N",
        "block_m",
        "block_n",
    }
    out: list[tuple[cst.CSTNode, str]] = []
    for call in site.calls("zeros", "full", "empty", "ones"):
        loop = next((a for a in site.ancestors(call) if isinstance(a, cst.For)), None)
        if loop is None or loop not in tiles:
            continue
        for node in site.nodes(cst.Name, lambda n: n.value in blocks):
            if any(a is call for a in site.ancestors(node)):
                out.append((node, f"{tiles[loop]}.shape[-2]"))
    return out


# -- the backward pass --------------------------------------------------------------------------
DOUT = ("dout", "do", "dO", "grad_out", "d_out", "grad_output", "g")
OUT = ("out", "o", "O", "output")
LSE = ("lse", "L", "logsumexp", "lse0", "m")


def _first_slice(site: Site, names: tuple[str, ...]) -> tuple[str, str] | None:
    """(name, slice code) of the first subscript of one of `names`: dout[:, :, i0:i1]."""
    for sub in site.nodes(
        cst.Subscript, lambda n: isinstance(n.value, cst.Name) and n.value.value in names
    ):
        return sub.value.value, ", ".join(site.code(e.slice) for e in sub.slice)
    return None


@template("flash-bwd-missing-delta")
def delta_term(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """dS = P * (dP - D) with D = rowsum(dO * O) of the tile's queries."""
    params = site.params(site.functions()[0] if site.functions() else None)
    douts = [p for p in params if p in DOUT]
    outs = [p for p in params if p in OUT]
    if not douts or not outs:
        return
    sl = _first_slice(site, (douts[0],))
    rows = f"[{sl[1]}]" if sl else ""
    delta = f"({douts[0]}{rows} * {outs[0]}{rows}).sum(dim=-1, keepdim=True)"
    for asg in site.nodes(
        cst.Assign,
        lambda n: (
            isinstance(n.value, cst.BinaryOperation) and isinstance(n.value.operator, cst.Multiply)
        ),
    ):
        if not code_of(asg.targets[0].target).strip().lower().startswith("ds"):
            continue
        dp = asg.value.right
        yield Candidate(
            site.replace(dp, f"({site.code(dp)} - {delta})"), "dS = P * (dP - rowsum(dO * O))"
        )


@template("flash-bwd-renormalizes-per-tile")
def tile_weights(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    """P of a tile is exp(S - lse) of the whole row, not the tile's own softmax."""
    lses = [
        site.code(s)
        for s in site.nodes(
            cst.Subscript, lambda n: isinstance(n.value, cst.Name) and n.value.value in LSE
        )
    ]
    sl = _first_slice(site, ("q",))
    params = site.params(site.functions()[0] if site.functions() else None)
    for name in [p for p in params if p in LSE][:1]:
        if sl:
            rows = sl[1].rsplit(",", 1)[0] if sl[1].rstrip().endswith(":") else sl[1]
            lses.append(f"{name}[{rows}, None]")
    for call in site.calls("softmax")[:2]:
        x = (
            call.args[0].value
            if call.args
            and receiver(call) is not None
            and code_of(receiver(call)) in ("torch", "F")
            else receiver(call)
        )
        if x is None:
            continue
        for lse in list(dict.fromkeys(lses))[:3]:
            yield Candidate(
                site.replace(
                    call, f"torch.exp({site.code(x)} - torch.nan_to_num({lse}, neginf=0.0))"
                ),
                f"exp(S - {lse})",
            )


@template("flash-bwd-dk-dv-transposed")
def transposed_grads(site: Site, d: Diagnostic, kata: Kata) -> Iterator[Candidate]:
    for node in site.nodes((cst.AugAssign, cst.Assign)):
        target = node.target if isinstance(node, cst.AugAssign) else node.targets[0].target
        if not code_of(target).strip().lower().startswith(("dv", "dk")):
            continue
        value = node.value
        prod = (
            value
            if isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.MatrixMultiply)
            else None
        )
        if prod is None and isinstance(value, cst.BinaryOperation):
            prod = next(
                (
                    x
                    for x in (value.right, value.left)
                    if isinstance(x, cst.BinaryOperation)
                    and isinstance(x.operator, cst.MatrixMultiply)
                ),
                None,
            )
        if prod is None:
            continue
        left = prod.left
        if isinstance(left, cst.Attribute) and left.attr.value in ("mT", "T"):
            new = site.code(left.value)
        elif (
            isinstance(left, cst.Call)
            and callee(left) == "transpose"
            and receiver(left) is not None
        ):
            new = site.code(receiver(left))
        else:
            new = f"{site.code(left)}.transpose(-2, -1)"
        yield Candidate(site.replace(left, new), "the other side of the transpose")


# exported for bands.py
ceil_divisions = _ceil_divisions
tile_sizes = _tile_sizes
