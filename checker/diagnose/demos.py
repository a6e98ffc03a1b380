"""Tiny runnable demonstrations for `kata explain ID`: the code is shown, run, and its real
output printed under it. Each one makes the mistake visible on a labelled toy input.

Only stdlib at import time; the snippets import torch/numpy themselves when run.
"""

from __future__ import annotations

import contextlib
import io
import textwrap
import warnings

DEMOS: dict[str, str] = {
    "scale-by-d-model": """
        import math, torch
        torch.manual_seed(0)
        D, H = 64, 8
        d = D // H                                   # head dim 8
        q, k = torch.randn(100_000, d), torch.randn(100_000, d)
        dots = (q * k).sum(-1)                       # one head's q.k
        print(f"std of q.k            {dots.std():.2f}   (about sqrt(d) = {math.sqrt(d):.2f})")
        print(f"std of q.k / sqrt(d)  {(dots / math.sqrt(d)).std():.2f}   <- unit scale")
        print(f"std of q.k / sqrt(D)  {(dots / math.sqrt(D)).std():.2f}   <- sqrt(H) = {math.sqrt(H):.2f} times too small")
    """,
    "missing-scale": """
        import math, torch
        torch.manual_seed(0)
        d = 256
        q, k = torch.randn(1, d), torch.randn(6, d)
        scores = q @ k.T
        print("softmax(q.k)          ", torch.softmax(scores, -1).numpy().round(3))
        print("softmax(q.k / sqrt(d))", torch.softmax(scores / math.sqrt(d), -1).numpy().round(3))
    """,
    "scale-not-sqrt": """
        import math, torch
        torch.manual_seed(0)
        for d in (16, 256):
            dots = (torch.randn(20_000, d) * torch.randn(20_000, d)).sum(-1)
            print(f"d={d:4d}  std(q.k/sqrt(d)) = {(dots / math.sqrt(d)).std():.3f}   std(q.k/d) = {(dots / d).std():.3f}")
    """,
    "scale-inverted": """
        import math, torch
        torch.manual_seed(0)
        d = 16
        q, k = torch.randn(1, d), torch.randn(5, d)
        scores = q @ k.T
        print("scores / sqrt(d):", torch.softmax(scores / math.sqrt(d), -1).numpy().round(3))
        print("scores * sqrt(d):", torch.softmax(scores * math.sqrt(d), -1).numpy().round(3))
    """,
    "scale-argument-ignored": """
        import math

        def pick(scale, d=64):
            wrong = 1 / math.sqrt(d)                           # always the default
            sloppy = scale or 1 / math.sqrt(d)                 # replaces 0.0 too
            right = 1 / math.sqrt(d) if scale is None else scale
            return wrong, sloppy, right

        for scale in (None, 0.3, 0.0):
            print(f"scale={scale!s:5}  ignored={pick(scale)[0]:.3f}  `or`={pick(scale)[1]:.3f}  right={pick(scale)[2]:.3f}")
    """,
    "softmax-wrong-dim": """
        import torch
        torch.manual_seed(0)
        scores = torch.randn(2, 3, 4, 5)             # (B, H, L, S)
        for dim in (-1, -2, 1):
            w = torch.softmax(scores, dim=dim)
            print(f"dim={dim:2d}: sum over keys of query 0 = {w[0, 0, 0].sum():.3f}")
    """,
    "unstable-softmax": """
        import torch
        scores = torch.tensor([[1000.0, 999.0, 0.0]])
        e = torch.exp(scores)
        print("exp(scores)                 ", e)
        print("exp / sum  (no max shift)   ", e / e.sum(-1, keepdim=True))
        shifted = torch.exp(scores - scores.amax(-1, keepdim=True))
        print("shifted by the row max      ", shifted / shifted.sum(-1, keepdim=True))
    """,
    "causal-mask-inverted": """
        import torch
        L = S = 4
        print("allowed = tril (j <= p):")
        print(torch.ones(L, S, dtype=torch.bool).tril().int())
        print("inverted = triu(1) (j > p): the future")
        print(torch.ones(L, S, dtype=torch.bool).triu(1).int())
    """,
    "causal-mask-excludes-diagonal": """
        import torch
        L = S = 4
        print("tril(diagonal=0): a token sees itself")
        print(torch.ones(L, S, dtype=torch.bool).tril(0).int())
        print("tril(diagonal=-1): row 0 has no key at all")
        print(torch.ones(L, S, dtype=torch.bool).tril(-1).int())
    """,
    "causal-mask-leaks-future": """
        import torch
        L = S = 4
        print("tril(diagonal=0):")
        print(torch.ones(L, S, dtype=torch.bool).tril(0).int())
        print("tril(diagonal=1): each query also reads the next token")
        print(torch.ones(L, S, dtype=torch.bool).tril(1).int())
    """,
    "causal-mask-top-left": """
        import torch
        L, S = 2, 5                                  # 2 new queries, 5 keys in the KV cache
        print("top-left  tril():", torch.ones(L, S, dtype=torch.bool).tril().int().tolist())
        print("bottom-right tril(S - L):", torch.ones(L, S, dtype=torch.bool).tril(S - L).int().tolist())
    """,
    "mask-polarity-flipped": """
        import torch
        scores = torch.zeros(1, 5)
        keep = torch.arange(5) < 3                   # 3 real keys, 2 padding: True = may attend
        print("mask                       ", keep.int().tolist())
        print("masked_fill(~mask, -inf)   ", torch.softmax(scores.masked_fill(~keep, float("-inf")), -1).numpy().round(3))
        print("masked_fill(mask, -inf)    ", torch.softmax(scores.masked_fill(keep, float("-inf")), -1).numpy().round(3))
    """,
    "mask-ignored": """
        import torch
        scores = torch.zeros(1, 4)
        mask = torch.tensor([[True, True, False, False]])
        scores.masked_fill(~mask, float("-inf"))     # returns a new tensor, which is thrown away
        print("not assigned:", torch.softmax(scores, -1).numpy().round(3))
        scores = scores.masked_fill(~mask, float("-inf"))
        print("assigned:    ", torch.softmax(scores, -1).numpy().round(3))
    """,
    "mask-added-as-float": """
        import torch
        scores = torch.zeros(1, 4)
        mask = torch.tensor([[True, True, False, False]])
        print("scores + mask         ", torch.softmax(scores + mask, -1).numpy().round(3))
        print("masked_fill(~mask,-inf)", torch.softmax(scores.masked_fill(~mask, float("-inf")), -1).numpy().round(3))
    """,
    "fully-masked-row-nan": """
        import torch
        scores = torch.tensor([[0.5, 1.0, 2.0], [0.3, 0.1, 0.2]])
        mask = torch.tensor([[True, False, True], [False, False, False]])   # row 1: no key
        print(torch.softmax(scores.masked_fill(~mask, float("-inf")), -1))
    """,
    "fully-masked-row-uniform": """
        import torch
        v = torch.tensor([[1.0], [2.0], [3.0], [6.0]])           # mean of V = 3.0
        scores = torch.tensor([[0.5, 1.0, 2.0, 0.1]])
        mask = torch.zeros(1, 4, dtype=torch.bool)               # this query may attend nothing
        w = torch.softmax(scores.masked_fill(~mask, -1e9), -1)
        print("-1e9 fill: weights", w.numpy().round(3), "-> output", (w @ v).item())
        s = scores.masked_fill(~mask, float("-inf"))
        m = s.amax(-1, keepdim=True)
        e = torch.exp(s - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
        z = e.sum(-1, keepdim=True)
        w = e / torch.where(z > 0, z, torch.ones_like(z))
        print("-inf + guard: weights", w.numpy().round(3), "-> output", (w @ v).item())
    """,
    "fully-masked-row-nan-gradient": """
        import torch
        scores = torch.tensor([[0.5, 1.0], [0.3, 0.1]], requires_grad=True)
        bias = torch.tensor([[0.0, 0.0], [float("-inf"), float("-inf")]])   # row 1 fully masked
        w = torch.nan_to_num(torch.softmax(scores + bias, -1))
        print("forward:", w.detach())
        w.sum().backward()
        print("gradient:", scores.grad)
    """,
    "mask-applied-after-softmax": """
        import torch
        scores = torch.tensor([[2.0, 1.0, 0.5, 0.1]])
        mask = torch.tensor([[True, True, False, False]])
        after = torch.softmax(scores, -1) * mask
        before = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
        print("mask after softmax :", after.numpy().round(3), "sum", round(after.sum().item(), 3))
        print("mask before softmax:", before.numpy().round(3), "sum", round(before.sum().item(), 3))
    """,
    "padding-mask-wrong-axis": """
        import torch
        B, H, L, S = 2, 1, 2, 2                      # B == L: shapes fit, meaning does not
        keep = torch.tensor([[True, False], [True, True]])       # (B, S): batch 0 has 1 real key
        scores = torch.zeros(B, H, L, S)
        right = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        wrong = scores.masked_fill(~keep, float("-inf"))         # (B, S) broadcasts as (1, 1, B, S)
        print("batch 0, (B,1,1,S):", right[0, 0].tolist())
        print("batch 0, (B,S)    :", wrong[0, 0].tolist())
    """,
    "transpose-2d-on-batched": """
        import warnings, torch
        warnings.simplefilter("ignore")
        k = torch.zeros(2, 3, 7, 8)                  # (B, H, S, d)
        print("k.T                ", tuple(k.T.shape))
        print("k.transpose(-2, -1)", tuple(k.transpose(-2, -1).shape))
        print("k.mT               ", tuple(k.mT.shape))
    """,
    "split-heads-without-transpose": """
        import torch
        B, L, H, d = 1, 3, 2, 2
        # feature value = 10 * token + feature index, so each number says where it came from
        x = torch.arange(L)[:, None] * 10 + torch.arange(H * d)[None, :]
        x = x.view(B, L, H * d)
        print("view(B, H, L, d), head 0:")
        print(x.view(B, H, L, d)[0, 0])
        print("view(B, L, H, d).transpose(1, 2), head 0:")
        print(x.view(B, L, H, d).transpose(1, 2)[0, 0])
    """,
    "merge-heads-without-transpose": """
        import torch
        B, H, L, d = 1, 2, 3, 2
        # value = 100 * head + 10 * token + feature
        out = (torch.arange(H)[:, None, None] * 100 + torch.arange(L)[None, :, None] * 10
               + torch.arange(d)[None, None, :]).view(B, H, L, d)
        print("reshape(B, L, H*d), token 0:", out.reshape(B, L, H * d)[0, 0].tolist())
        print("transpose(1, 2) first      :", out.transpose(1, 2).reshape(B, L, H * d)[0, 0].tolist())
    """,
    "missing-contiguous": """
        import torch
        out = torch.zeros(2, 4, 3, 8).transpose(1, 2)         # (B, L, H, d), not contiguous
        try:
            out.view(2, 3, 32)
        except RuntimeError as exc:
            print("view:", str(exc).split(". ")[0])
        print("contiguous().view:", tuple(out.contiguous().view(2, 3, 32).shape))
        print("reshape:          ", tuple(out.reshape(2, 3, 32).shape))
    """,
    "missing-output-projection": """
        import torch
        torch.manual_seed(0)
        H, d = 2, 2
        heads = torch.tensor([[1.0, 1.0, 0.0, 0.0]])          # only head 0 produced something
        w_o = torch.nn.Linear(H * d, H * d, bias=False)
        print("without W_o:", heads.tolist(), " (head 1's slice stays 0)")
        print("with W_o:   ", [round(x, 3) for x in w_o(heads).detach()[0].tolist()], " (every output mixes both heads)")
    """,
    "dropout-in-eval": """
        import torch
        import torch.nn.functional as F
        torch.manual_seed(0)
        x = torch.ones(1, 6)
        drop = torch.nn.Dropout(0.5).eval()
        print("F.dropout(x, 0.5)           :", F.dropout(x, 0.5).tolist())
        print("nn.Dropout(0.5) in eval mode:", drop(x).tolist())
    """,
    "kv-repeat-instead-of-interleave": """
        import torch
        H, Hkv = 6, 2
        kv = torch.arange(Hkv).view(1, Hkv, 1, 1)     # KV head h holds the label h
        g = H // Hkv
        print("repeat(1, g, 1, 1)       :", kv.repeat(1, g, 1, 1).flatten().tolist())
        print("repeat_interleave(g, 1)  :", kv.repeat_interleave(g, dim=1).flatten().tolist())
        print("query head h should read : ", [h // g for h in range(H)])
    """,
    "kv-projection-wrong-size": """
        import torch
        D, H, Hkv = 64, 8, 2
        d = D // H
        print("q_proj:", tuple(torch.nn.Linear(D, H * d).weight.shape))
        print("k_proj:", tuple(torch.nn.Linear(D, Hkv * d).weight.shape), "(not", (H * d, D), ")")
    """,
    "kv-heads-not-expanded": """
        import torch
        q, k = torch.zeros(1, 8, 4, 16), torch.zeros(1, 2, 4, 16)
        try:
            q @ k.transpose(-2, -1)
        except RuntimeError as exc:
            print(exc)
        print(tuple((q @ k.repeat_interleave(4, dim=1).transpose(-2, -1)).shape))
    """,
    "window-off-by-one": """
        import torch
        L = S = 6
        W = 3                                         # 3 keys including the query itself
        p, j = torch.arange(L)[:, None], torch.arange(S)[None, :]
        print("p - W < j <= p  (W keys):")
        print(((j <= p) & (j > p - W)).int())
        print("p - W <= j <= p (W + 1 keys):")
        print(((j <= p) & (j >= p - W)).int())
    """,
    "window-wrong-side": """
        import torch
        L = S = 5
        p, j = torch.arange(L)[:, None], torch.arange(S)[None, :]
        print("window (2, 0): the 3 most recent keys")
        print(((j >= p - 2) & (j <= p)).int())
        print("window (0, 2): the next 3 keys")
        print(((j >= p) & (j <= p + 2)).int())
    """,
    "window-materializes-full-scores": """
        L = S = 8192
        W = 128
        print(f"full scores : {L * S:>12,} elements")
        print(f"banded      : {L * W:>12,} elements ({L * S // (L * W)} times fewer)")
    """,
    "mla-scale-without-rope-dim": """
        import math
        nope, rope = 128, 64                          # DeepSeek-V2
        print(f"1/sqrt(nope)        = {1 / math.sqrt(nope):.4f}")
        print(f"1/sqrt(nope + rope) = {1 / math.sqrt(nope + rope):.4f}  <- q.k runs over all {nope + rope} dims")
    """,
    "mla-kv-b-split-global": """
        import torch
        H, nope, v = 2, 2, 1
        # per head: [k k v]; labels: 10 * head + (0 = key, 5 = value)
        kv = torch.tensor([0, 0, 5, 10, 10, 15])
        k_wrong, v_wrong = kv.split([H * nope, H * v])
        print("global split  keys:", k_wrong.tolist(), " values:", v_wrong.tolist())
        k_right, v_right = kv.view(H, nope + v).split([nope, v], dim=-1)
        print("per-head split keys:", k_right.flatten().tolist(), " values:", v_right.flatten().tolist())
    """,
    "mla-missing-kv-norm": """
        import torch
        torch.manual_seed(0)
        c_kv = torch.randn(4, 512) * 7.0              # the compressed latent, any scale
        norm = torch.nn.RMSNorm(512, eps=1e-6)
        print("RMS before norm:", c_kv.pow(2).mean(-1).sqrt().numpy().round(2))
        print("RMS after norm: ", norm(c_kv).pow(2).mean(-1).sqrt().detach().numpy().round(2))
    """,
    "mla-rope-on-nope": """
        import torch
        torch.manual_seed(0)

        def rope(x, pos):                             # rotate_half layout, one position
            half = x.shape[-1] // 2
            inv = 10000 ** (-torch.arange(half) / half)
            cos, sin = torch.cos(pos * inv).repeat(2), torch.sin(pos * inv).repeat(2)
            return x * cos + torch.cat([-x[half:], x[:half]]) * sin

        q, k = torch.randn(8), torch.randn(8)
        print("unrotated q.k          :", round((q @ k).item(), 4))
        print("rotated at positions 3,1:", round((rope(q, 3) @ rope(k, 1)).item(), 4), "(depends on position)")
    """,
    "rope-wrong-layout": """
        d = 8
        print("interleaved pairs :", [(2 * i, 2 * i + 1) for i in range(d // 2)])
        print("rotate_half pairs :", [(i, i + d // 2) for i in range(d // 2)])
    """,
    "latent-queries-from-input": """
        import torch
        B, L, D, n_latents = 2, 100, 32, 8
        x, latents = torch.zeros(B, L, D), torch.zeros(n_latents, D)
        print("queries from x       ->", tuple(x.shape), "output rows per batch:", x.shape[1])
        print("queries from latents ->", tuple(latents.expand(B, -1, -1).shape), "output rows per batch:", n_latents)
    """,
    "banned-api": """
        import torch
        import torch.nn.functional as F
        from torch.overrides import TorchFunctionMode

        class Calls(TorchFunctionMode):               # what the checker does: see every call that runs
            def __torch_function__(self, func, types, args=(), kwargs=None):
                print("  called", getattr(func, "__name__", str(func)))
                return func(*args, **(kwargs or {}))

        q = torch.zeros(1, 2, 4)
        attend = getattr(F, "scaled_dot_" + "product_attention")   # hiding the name does not help
        with Calls():
            attend(q, q, q)
    """,
    "dtype-not-preserved": """
        import math
        import numpy as np
        q = np.ones((2, 8), dtype=np.float32)
        print("q / np.sqrt(8)  ->", (q / np.sqrt(8)).dtype)
        print("q / math.sqrt(8)->", (q / math.sqrt(8)).dtype)
    """,
    "input-mutated": """
        import torch
        scores = torch.zeros(2, 2)
        mask = torch.tensor([[True, False], [True, True]])
        caller = scores
        scores.masked_fill_(~mask, float("-inf"))     # in place: the caller's tensor changes
        print("caller's tensor after masked_fill_:", caller.tolist())
    """,
    "nondeterministic-output": """
        import torch
        import torch.nn.functional as F

        def attend(w, v):
            return F.dropout(w, 0.5) @ v               # F.dropout defaults to training=True

        w, v = torch.full((1, 4), 0.25), torch.arange(4.0).unsqueeze(1)
        print("call 1:", attend(w, v).item(), "  call 2:", attend(w, v).item(), "  without dropout:", (w @ v).item())
    """,
    "input-not-supported": """
        import torch

        def masked(scores, mask):
            B, _, L, S = mask.shape                  # written for (B, 1, L, S) masks only
            return scores.masked_fill(~mask, float("-inf"))

        scores = torch.zeros(2, 3, 4, 4)              # (B, H, L, S)
        for shape in ((2, 1, 4, 4), (4, 4), (2, 1, 1, 4)):
            try:
                print(shape, "->", tuple(masked(scores, torch.ones(shape, dtype=torch.bool)).shape))
            except ValueError as exc:
                print(shape, "-> ValueError:", exc)
    """,
    "weights-unmappable": """
        import torch
        H, d = 2, 3
        D = H * d
        rows = torch.arange(3 * D)                          # row i of a fused Linear(D, 3D) weight
        q, k, v = rows.split(D)                              # [q; k; v]: GPT-2's c_attn
        print("[q; k; v]      q rows:", q.tolist())
        q, k, v = rows.view(H, 3, d).unbind(1)              # per head [q_h | k_h | v_h]: GPT-NeoX
        print("per head (NeoX) q rows:", q.flatten().tolist())
    """,
    "numpy-float-warning": """
        import warnings
        import numpy as np
        scores = np.array([[-np.inf, -np.inf]])       # a fully masked row
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            e = np.exp(scores - scores.max(-1, keepdims=True))
        print("result:", e, " warning:", caught[0].message)
        m = scores.max(-1, keepdims=True)
        print("shift by 0 instead:", np.exp(scores - np.where(np.isfinite(m), m, 0)))
    """,
}


def code(mistake_id: str) -> str | None:
    src = DEMOS.get(mistake_id)
    return textwrap.dedent(src).strip() + "\n" if src else None


def run(mistake_id: str) -> str:
    """Run the demonstration; its printed output (and any exception or warning) as text."""
    src = code(mistake_id)
    if src is None:
        return ""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(compile(src, f"<demo {mistake_id}>", "exec"), {"__name__": "__demo__"})  # noqa: S102 - our own code
        except Exception as exc:  # noqa: BLE001 - shown as the demo's output
            print(f"{type(exc).__name__}: {exc}")
    return buf.getvalue().rstrip()
