"""Static rules on the candidate's source: they only *point at lines* for a mistake that
behaviour, the trace or a crash already established (the `.repeat(` line, the
`masked_fill(` line, the `/ math.sqrt(` line), and find what no probe can see (an import
of a banned API that never ran). A static hit alone never fails a solution.

Rules read the statements' own source text (comments and docstrings left out), so
`# do not use .T here` never counts.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from attnkata.checker.models import SourceRef


@dataclass(frozen=True)
class Stmt:
    line: int
    end_line: int
    text: str  # the statement's source without comments


def physical_lines(source: str) -> list[str]:
    """The source's lines with their ends, split where the parser splits (\r\n, \r, \n)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", source)


def segment(lines: list[str], node: ast.AST) -> str:
    """ast.get_source_segment(source, node) from physical_lines(source): that function splits
    the whole source again on every call (quadratic over a file's statements: ~10 ms of a
    failing check's diagnosis)."""
    try:
        l0, l1 = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined, operator]
        c0, c1 = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        return ""
    if c1 is None or not 0 <= l0 <= l1 < len(lines):
        return ""
    if l0 == l1:  # offsets count UTF-8 bytes
        return lines[l0].encode()[c0:c1].decode()
    first = lines[l0].encode()[c0:].decode()
    last = lines[l1].encode()[:c1].decode()
    return first + "".join(lines[l0 + 1 : l1]) + last


class Source:
    """The candidate's file parsed once: simple statements in order, and the parse tree."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines()
        try:
            self.tree: ast.Module | None = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # hostile nesting: no rules
            self.tree = None
        self.stmts = self._statements() if self.tree else []

    def _statements(self) -> list[Stmt]:
        assert self.tree is not None
        physical = physical_lines(self.source)
        out: list[Stmt] = []
        for node in ast.walk(self.tree):
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                continue  # docstrings
            target: ast.AST | None = None
            if isinstance(node, ast.stmt) and not hasattr(node, "body"):
                target = node
            elif isinstance(node, ast.If | ast.While):
                target = node.test
            elif isinstance(node, ast.For):
                target = node.iter
            if target is None:
                continue
            seg = segment(physical, target)
            text = "\n".join(re.sub(r"#.*$", "", ln) for ln in seg.splitlines())
            out.append(Stmt(target.lineno, target.end_lineno or target.lineno, text))
        out.sort(key=lambda s: s.line)
        return out

    def find(self, pattern: str, flags: int = 0) -> list[Stmt]:
        rx = re.compile(pattern, flags)
        return [s for s in self.stmts if rx.search(s.text)]

    def ref(self, stmt: Stmt) -> SourceRef:
        text = self.lines[stmt.line - 1].strip() if 0 < stmt.line <= len(self.lines) else stmt.text
        return SourceRef(
            line=stmt.line,
            end_line=stmt.end_line if stmt.end_line != stmt.line else None,
            text=text,
        )

    def function_line(self, name: str) -> int | None:
        if self.tree is None:
            return None
        for node in ast.walk(self.tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
                return node.lineno
        return None


# Patterns, by mistake id. Each is a regex on statement text; the first rule that finds
# something wins. Patterns are deliberately broad: they run only after the mistake is known.
_SCALE = r"sqrt|\*\*\s*-?\s*0?\.5|\bscale\b|rsqrt"
_MASK_FILL = r"masked_fill|\bwhere\s*\(|\[\s*~?\s*\w*mask\w*\s*\]\s*="
_BIG_NEG = (
    r"-\s*(?:1e\s*[3-9]|1e\s*[1-9]\d|1\s*e\s*\+?\d+|\d{4,}(?:\.0*)?\b)|finfo|-\s*1e\+?\d\d|\.min\b"
)
RULES: dict[str, list[str]] = {
    "scale-by-d-model": [
        r"sqrt\s*\(\s*(?:self\.)?(?:d_model|embed_dim|D|dim|hidden)\b|size\(\s*-1\s*\)\s*\*\*|"
        + _SCALE
    ],
    "missing-scale": [_SCALE, r"@|matmul|einsum|bmm"],
    "scale-not-sqrt": [_SCALE, r"/\s*\(?\s*\w*(?:d|dim|d_k|head_dim)\b"],
    "scale-inverted": [_SCALE],
    "scale-argument-ignored": [r"\bscale\b", _SCALE],
    "mla-scale-without-rope-dim": [_SCALE],
    "softmax-wrong-dim": [
        r"softmax\s*\([^)]*(?:dim|axis)\s*=\s*(?!-1\b)",
        r"softmax",
        r"\.sum\s*\(|\bsum\s*\(",
    ],
    "unstable-softmax": [r"\bexp\s*\(", r"softmax"],
    "fully-masked-row-uniform": [_BIG_NEG, _MASK_FILL],
    "fully-masked-row-nan": [r"\binf\b", r"softmax"],
    "fully-masked-row-nan-gradient": [r"nan_to_num|isnan", r"\bwhere\s*\(", r"softmax"],
    "mask-polarity-flipped": [_MASK_FILL, r"\bmask\b"],
    "mask-ignored": [r"masked_fill|mask"],
    "mask-added-as-float": [r"\+\s*\(?\s*~?\s*\w*mask|mask\w*\s*\+", r"\bmask\b"],
    "mask-applied-after-softmax": [r"\bmask\b"],
    "padding-mask-wrong-axis": [
        r"view|reshape|unsqueeze|\[\s*:?\s*,?\s*None|None\s*,\s*:?\s*\]|expand"
    ],
    "causal-mask-inverted": [r"tril|triu|<=|>=|<|>"],
    "causal-mask-excludes-diagonal": [r"tril|triu|<=|>=|<|>"],
    "causal-mask-leaks-future": [r"tril|triu|<=|>=|<|>"],
    "causal-mask-top-left": [r"tril|triu", r"arange"],
    "window-off-by-one": [
        r"\bW\s*=|[<>]=?\s*\(?\s*p\b|\bp\s*[-+]\s*\(?\s*(?:left|right|W|w)\b",
        r"window|left|right|\bW\b",
    ],
    # The direction the window is off in (from behaviour) says which line to show: one key too
    # few is a window size without its "+ 1" or a strict comparison; one too many is `p - W`.
    "window-off-by-one/narrower": [
        r"\bW\s*=(?![^#\n]*\+\s*1\b)",
        r"[<>](?!=)\s*\(?\s*p\b|\bp\b\s*[<>](?!=)",
    ],
    "window-off-by-one/wider": [
        r"\bp\s*-\s*\(?\s*(?:W|w|window)\b(?!\s*[-+]\s*1)",
        r"<=\s*\(?\s*(?:W|w)\b|\b(?:W|w)\s*>=",
    ],
    "window-wrong-side": [
        r"=\s*window\b|[<>]=?\s*\(?\s*p\b|\bp\s*[-+]\s*\(?\s*(?:left|right|W|w)\b",
        r"window|left|right|\bW\b",
    ],
    "window-materializes-full-scores": [r"@|matmul|einsum"],
    "transpose-2d-on-batched": [
        r"\.T\b|\.t\s*\(\s*\)|np\.transpose\s*\(\s*\w+\s*\)|transpose\s*\(\s*0\s*,\s*1\s*\)"
    ],
    "split-heads-without-transpose": [r"(?:view|reshape)\s*\([^)]*,[^)]*,[^)]*,[^)]*\)"],
    "merge-heads-without-transpose": [r"(?:view|reshape)\s*\(\s*\w+\s*,\s*\w+\s*,\s*[^,)]+\)"],
    "missing-contiguous": [r"\.view\s*\("],
    "missing-output-projection": [r"\breturn\b"],
    "kv-repeat-instead-of-interleave": [r"\.repeat\s*\(|\btile\s*\(|\.expand\s*\("],
    "kv-heads-not-expanded": [r"@|matmul|einsum"],
    "kv-projection-wrong-size": [r"Linear\s*\("],
    "dropout-in-eval": [r"dropout"],
    "mla-rope-on-nope": [r"rope|rotary|apply_rotary"],
    "mla-kv-b-split-global": [r"split|chunk|\[\s*\.\.\.\s*,\s*:"],
    "mla-missing-kv-norm": [r"kv_b|kv_a"],
    "rope-wrong-layout": [r"::\s*2|rotate|cat\s*\(|stack\s*\("],
    "latent-queries-from-input": [r"q_proj|query"],
    "dtype-not-preserved": [
        # the casts first: a `dtype=` line is more often the right one (a bool mask, an arange)
        r"\.double\s*\(|\.float\s*\(|np\.sqrt|astype",
        r"dtype\s*=|torch\.tensor\s*\(|float64|float32",
    ],
    "input-mutated": [r"\.(?!__)\w+_\s*\(|[+\-*/&|]=(?!=)|\[[^\]]*\]\s*=(?!=)"],
    "topk-before-mask": [r"topk|kthvalue|sort\s*\(", r"masked_fill"],
    "topk-softmax-not-renormalized": [r"softmax|\bexp\s*\(", r"topk"],
    "topk-wrong-dim": [
        r"topk\s*\([^)]*(?:dim|axis)\s*=\s*(?!-1\b)|topk\s*\([^,)]*,\s*(?!-1\b)-?\d",
        r"topk",
    ],
    "topk-keeps-masked": [r"scatter|topk"],
    "topk-off-by-one": [r"[<>]\s*\w*(?:kth|thresh|th)\w*|topk\s*\([^)]*[+-]\s*1", r"topk|kthvalue"],
    "global-one-direction": [r"\bglobal|n_global|is_global|gidx"],
    "window-in-tokens": [r"\babs\s*\(|[<>]=?\s*window\b", r"\bwindow\b"],
    "random-blocks-transposed": [r"random_blocks|\brand\w*\b"],
    "last-block-dropped": [r"//\s*block\b|\bnb\s*=", r"//\s*block_size\b|num_blocks\s*="],
    "block-window-off-by-one": [r"[<>]=?\s*\(?\s*window\b|window\s*[+-]\s*1"],
    "longformer-window-as-total": [r"window\s*//\s*2|window\s*/\s*2|\bw\s*=\s*window"],
    "padding-ignores-global": [r"key_padding|padding|\breal\b"],
    "materializes-full-scores": [r"@|matmul|einsum"],
    # FlashAttention: the accumulation lines (acc = alpha * acc + p @ v, l = alpha * l + p.sum())
    "online-softmax-no-rescale": [r"\+=?[^=]*(?:@|matmul|einsum)|(?:@|matmul|einsum).*\+"],
    "online-softmax-sum-not-rescaled": [r"\+=?.*\.sum\s*\(|\.sum\s*\(.*\+"],
    "flash-max-init-zero": [
        r"(?:max|\bm|\bm_\w*)\s*=\s*(?:torch\.)?(?:zeros|new_zeros|full|new_full|zeros_like)\b"
    ],
    "flash-empty-block-nan": [r"\bexp\s*\(", r"\bmaximum\s*\(|amax|\.max\s*\("],
    "flash-tail-block-dropped": [
        r"range\s*\([^)]*(?://|-\s*\(?\s*\w*block)",
        r"=\s*\w+\s*//\s*\(?\s*\w*(?:split|\bN\b)",  # flash-decoding: cs = S // N
        r"range\s*\(",
    ],
    "lse-wrong": [
        r"\blse\w*\s*\[[^\]]*\]\s*=|\blse\w*\s*=\s*(?!torch\.(?:full|zeros|empty))",
        r"\blse\b",
    ],
    "flash-bwd-missing-delta": [r"\bds\w*\s*=|\bdS\w*\s*=", r"\bdp\w*\s*="],
    "flash-bwd-missing-scale": [r"\bd[qk]\w*\s*(?:\[[^\]]*\])?\s*(?:\+=|=).*(?:@|matmul|einsum)"],
    "flash-bwd-renormalizes-per-tile": [r"softmax|amax|\.max\s*\(", r"\bexp\s*\("],
    "flash-bwd-nan-empty-rows": [r"\bexp\s*\(.*lse", r"\blse\b"],
    "flash-bwd-dk-dv-transposed": [
        r"\bd[kv]\w*\s*(?:\[[^\]]*\])?\s*(?:\+=|=).*(?:@|matmul|einsum)"
    ],
    # RoPE, KV cache, MLA decoding: the frequency line, the rotation, the positions, the concatenation.
    "rope-inv-freq-exponent": [r"\*\*.*arange|arange.*\*\*|pow\s*\(", r"inv_freq|freq"],
    "rope-rotation-direction": [
        r"cat\s*\(\s*[\[(]\s*\w+\s*,\s*-|[+-]\s*\w+\s*\*\s*sin",
        r"\bsin\b",
    ],
    "rope-positions-ignored": [
        r"arange\s*\(\s*(?:L|\w*len\w*|\w+\.shape\s*\[\s*-?2\s*\]|\w+\.size\s*\(\s*-?2\s*\))\s*[,)]",
        r"shape\s*\[\s*-?2\s*\]",
    ],
    "cache-positions-restart": [
        r"arange\s*\(\s*(?:L|\w*len\w*|\w+\.shape\s*\[\s*1\s*\]|\w+\.size\s*\(\s*1\s*\))\s*[,)]",
        r"\bpos\w*\s*=.*arange",
    ],
    "cache-stores-repeated-heads": [r"repeat_interleave|\.repeat\s*\(|\.expand\s*\("],
    "cache-concat-wrong-dim": [
        r"\bcat\s*\(\s*[\[(]\s*(?:\w*cache|past)[^\n]*(?:dim\s*=\s*|\]\s*,\s*)(?!2\b)-?\d",
        r"\bcat\s*\(\s*[\[(]\s*(?:\w*cache|past)",
    ],
    "rope-on-values": [r"\b(?:rope|rotate|apply_rotary\w*|apply_rope)\s*\(\s*v\w*\b"],
    "cache-rerotated": [
        r"\b(?:rope|rotate\w*|apply_rotary\w*|apply_rope|_rot\w*)\s*\([^)]*(?:arange\s*\(\s*(?:\w+\.shape\s*\[\s*\d\s*\]|S|P\s*\+\s*L)|_all\b)",
        # attention-sinks: the concatenation of T = C + L keys rotated at 0 .. T - 1
        r"\b(?:rope|rotate\w*|apply_rotary\w*|apply_rope|_rot\w*)\s*\([^)]*arange\s*\(\s*(?:T|C\s*\+\s*L)\s*\)",
    ],
    # Attention sinks: the cut of the cache and the rotation of the kept window.
    "sink-tokens-evicted": [
        r"\[[^\]]*-\s*\(?\s*\w+[^\]:]*:\s*\]|\[[^\]]*\b\w*(?:e|evict\w*|drop\w*|shift|start)\s*:\s*\]",
        r"\bcat\s*\(|\bwindow\b",
    ],
    "positions-not-reassigned": [
        r"\[[^\]]*n_sink\w*\s*\+\s*\w+\s*:\s*\]|\[[^\]]*-\s*\(?\s*window\b",
        r"\bcat\s*\(",
    ],
    "rerotation-wrong-direction": [
        r"\b(?:rope|rotate\w*|apply_rotary\w*|apply_rope|_rot\w*|turn)\s*\([^)]*(?:full|shift|\be\b|evict|drop)",
        r"re_?(?:rotation_)?(?:cos|sin)\w*\s*=|\bshift\w*\s*=",
        r"\bsin\b",
    ],
    # ALiBi: the slopes, the bias line, the query positions, the scores line.
    "alibi-slopes-wrong-for-non-power-of-two": [
        r"\bslopes?\w*\s*=[^\n]*(?:\+|\bcat\s*\(|\[\s*0?\s*:|\(\s*(?:n|n_heads|num_heads)\s*\))",
        r"\*\*\s*\(?\s*-\s*\(?\s*8|log2|\[\s*0?\s*::\s*2\s*\]",
        r"slope",
    ],
    "alibi-bias-sign": [
        r"\b(?:bias|alibi)\w*\s*=(?!=)",
        r"slope",
    ],
    "alibi-distance-top-left": [
        r"arange\s*\(\s*(?:L|\w*len\w*|\w+\.shape\s*\[\s*-?2\s*\]|\w+\.size\s*\(\s*-?2\s*\))\s*\)",
        r"\babs\s*\(|\bdist\w*\s*=|\brel\w*\s*=",
    ],
    "alibi-bias-scaled": [
        r"\([^\n]*(?:@|matmul|einsum|baddbmm)[^\n]*\+[^\n]*\)\s*(?:\*|/)"
        r"|(?:\*|/)\s*\([^\n]*(?:@|matmul|einsum)[^\n]*\+[^\n]*\)",
        r"\bscale\b[^\n]*(?:@|matmul|einsum|bias|alibi)|(?:@|matmul|einsum|bias|alibi)[^\n]*\bscale\b",
    ],
    "alibi-bias-not-symmetric": [
        r"clamp|relu|slope\w*[^\n]*\*[^\n]*(?:arange|k_pos|pos\w*)\b|(?:arange|k_pos)[^\n]*\*[^\n]*slope",
        r"\b(?:bias|alibi)\w*\s*=(?!=)",
    ],
    "mla-absorb-wrong-slice": [
        r"kv_b\w*\.weight\s*\[|\bw\w*\s*\[\s*:?\s*\w+\s*\*\s*\w+\s*:?\s*\]",
        r"kv_b\w*\.weight",
    ],
    "mla-cache-unnormalized": [r"kv_a_norm\s*\(", r"\bcat\s*\("],
    "mla-materializes-cache-heads": [r"kv_b_proj\s*\(", r"@|matmul|einsum"],
    # Paged attention and flash-decoding: the table lookup, the lengths, the merge.
    "block-table-ignored": [
        r"=\s*(?:torch\.)?arange\s*\(\s*\w*(?:block|nb)\w*",
        r"(?:k_cache|key_cache)\w*\s*\[|index_select",
    ],
    "context-length-off-by-one": [
        r"(?:len|length|context)\w*\s*(?:\[[^\]]*\])?\s*\)?\s*[-+]\s*1\b|<=\s*\w*(?:len|length)",
        r"\w*(?:len|length)\w*\s*\[",
    ],
    "paged-gathers-dense-kv": [r"\[\s*block_tables?\b[^\]]*\]", r"block_table"],
    "split-lse-combine-unweighted": [
        r"\bmean\s*\(|\.sum\s*\([^)]*\)\s*/\s*\(?\s*\w*(?:split|\bN\b)",
        r"\.sum\s*\(\s*dim\s*=\s*-2",
    ],
    "empty-split-nan": [r"softmax\s*\(", r"\bexp\s*\("],
    # flash-decoding's own lines (`locate` tries `<id>/<kata>` first): the split lse that adds
    # no max, the merge's max and its exp.
    "lse-wrong/flash-decoding": [
        r"\blse\w*\s*=(?!.*(?:\bm\w*\s*\+|\+\s*\bm\w*\b|max)).*\blog\s*\(",
    ],
    "fully-masked-row-nan/flash-decoding": [r"\w*max\w*\s*=.*(?:amax|\.max)\s*\(", r"\bexp\s*\("],
    "unstable-softmax/flash-decoding": [r"\bexp\s*\(\s*\w*lse\w*\s*\)", r"\bexp\s*\("],
    "banned-api": [
        r"scaled_dot_product_attention|MultiheadAttention|multi_head_attention_forward|flex_attention"
    ],
}

# The Triton katas' spellings (checked after each id's own patterns above, which a kernel
# written with tl.dot, tl.sum and tl.full does not match).
_TRITON_LINES = {
    "missing-load-mask": r"tl\.load\s*\((?![^)]*\bmask\s*=)",
    "missing-store-mask": r"tl\.store\s*\((?![^)]*\bmask\s*=)",
    "other-not-neg-inf": r"\bother\s*=\s*0|tl\.load\s*\((?![^)]*\bother\s*=)",
    "grid-misses-tail": r"//\s*\(?\s*\w*(?:BLOCK|block|ROWS|rows)",
    "stride-assumed-contiguous": r"tl\.(?:load|store)\s*\(",
    "causal-blocks-not-skipped": r"\brange\s*\(",
    "block-too-small-for-dot": r"\b(?:BLOCK_N|block_n|BLOCK_K|block_k)\b\s*=",
    "torch-instead-of-triton": r"torch\.(?:softmax|exp|matmul|bmm|einsum|logsumexp)|\.softmax\s*\(|@",
    "online-softmax-no-rescale": r"\bacc\w*\s*(?:\+=|=).*tl\.dot",
    "online-softmax-sum-not-rescaled": r"(?:\+=|=).*tl\.sum\s*\(",
    "flash-max-init-zero": r"\bm\w*\s*=\s*tl\.(?:zeros|full)\b",
    "flash-tail-block-dropped": r"range\s*\(|//",
    "causal-mask-top-left": r"<=|>=",
    "unstable-softmax": r"tl\.exp\s*\(",
    "missing-scale": r"tl\.dot",
    "scale-by-d-model": r"\bscale\b",
}
for _mid, _pattern in _TRITON_LINES.items():
    RULES.setdefault(_mid, []).append(_pattern)

MAX_LINES = 2


def locate(
    mistake: str,
    src: Source,
    *,
    extra: Callable[[Stmt], bool] | None = None,
    variant: str | None = None,
) -> list[SourceRef]:
    """Lines of the candidate's file where `mistake` is most likely written (at most two).
    `variant` (e.g. "wider") tries that form's own rules first."""
    patterns = RULES.get(f"{mistake}/{variant}", []) if variant else []
    for pattern in patterns + RULES.get(mistake, []):
        hits = src.find(pattern)
        if extra is not None:
            hits = [h for h in hits if extra(h)] or hits
        if mistake == "mask-ignored" and not hits:
            break
        if hits:
            return [src.ref(s) for s in hits[:MAX_LINES]]
    return []


BANNED_NAMES = (
    "scaled_dot_product_attention",
    "MultiheadAttention",
    "multi_head_attention_forward",
    "flex_attention",
    "_scaled_dot_product",
)


def banned_references(src: Source) -> list[tuple[SourceRef, str]]:
    """Imports of, and references to, banned attention APIs anywhere in the file."""
    if src.tree is None:
        return []
    found: list[tuple[SourceRef, str]] = []
    for node in ast.walk(src.tree):
        name = None
        if isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                module = getattr(node, "module", None) or ""
                if any(b in alias.name for b in BANNED_NAMES) or "flex_attention" in module:
                    name = alias.name
        elif (
            isinstance(node, ast.Attribute)
            and any(node.attr.startswith(b) for b in BANNED_NAMES)
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            name = node.attr  # (self.scaled_dot_product_attention is the candidate's own method)
        if name:
            stmt = Stmt(node.lineno, node.lineno, "")
            found.append((src.ref(stmt), name))
    seen: set[int] = set()
    return [(r, n) for r, n in found if not (r.line in seen or seen.add(r.line))]
