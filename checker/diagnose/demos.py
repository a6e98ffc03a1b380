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
    "rope-inv-freq-exponent": """
        import torch
        d, theta = 8, 10000.0
        right = theta ** (-torch.arange(0, d, 2) / d)             # exponents 0, 2/d, 4/d, 6/d
        wrong = theta ** (-torch.arange(d // 2) / d)              # exponents 0, 1/d, 2/d, 3/d
        print("theta^(-2i/d):", right.numpy().round(4))
        print("theta^(-i/d): ", wrong.numpy().round(4), "<- only pair 0 agrees")
    """,
    "rope-rotation-direction": """
        import math, torch
        a, b, angle = 1.0, 0.0, math.pi / 2                       # a pair (1, 0) turned by +90 degrees
        c, s = math.cos(angle), math.sin(angle)
        print("(a cos - b sin, a sin + b cos):", (round(a * c - b * s, 3), round(a * s + b * c, 3)), "<- (0, 1)")
        x = torch.tensor([a, b])
        x1, x2 = x.chunk(2)
        wrong = x * c + torch.cat([x2, -x1]) * s                  # rotate_half with the sign on the wrong half
        print("cat(x2, -x1) instead of cat(-x2, x1):", wrong.numpy().round(3).tolist(), "<- turned by -90 degrees")
    """,
    "rope-positions-ignored": """
        import torch
        inv_freq = 10000.0 ** (-torch.arange(0, 4, 2) / 4)
        positions = torch.tensor([7, 8, 9])                       # 3 new tokens after 7 cached ones
        print("angles from positions:      ", (positions[:, None] * inv_freq)[:, 0].tolist())
        print("angles from arange(L):      ", (torch.arange(3)[:, None] * inv_freq)[:, 0].tolist(), "<- as if at 0, 1, 2")
    """,
    "cache-positions-restart": """
        P = 5                                                      # tokens already in the cache
        for step, L in (("prefill", 5), ("chunk", 3), ("token", 1), ("token", 1)):
            P0 = 0 if step == "prefill" else P
            right = list(range(P0, P0 + L))
            wrong = list(range(L))                                 # torch.arange(L): restarts at 0
            print(f"{step:8s} P={P0:2d}  positions {right}  restart gives {wrong}")
            P = P0 + L
    """,
    "cache-stores-repeated-heads": """
        import torch
        B, H, Hkv, P, d = 1, 32, 8, 4096, 128
        k = torch.zeros(B, Hkv, P, d, dtype=torch.float16, device="meta")
        expanded = k.repeat_interleave(H // Hkv, dim=1)
        mib = lambda t: t.numel() * t.element_size() / 2**20
        print(f"cache with Hkv = {Hkv} heads: {tuple(k.shape)} {mib(k):.0f} MiB per layer for K")
        print(f"cache of repeated heads:   {tuple(expanded.shape)} {mib(expanded):.0f} MiB  (H / Hkv = {H // Hkv} times more)")
    """,
    "cache-concat-wrong-dim": """
        import torch
        k_cache = torch.zeros(2, 3, 5, 8)                          # (B, Hkv, P, d)
        k_new = torch.zeros(2, 3, 1, 8)                            # one new token
        print("dim=2:", tuple(torch.cat([k_cache, k_new], dim=2).shape), "<- (B, Hkv, P + 1, d)")
        for dim in (1, -1):
            try:
                print(f"dim={dim}:", tuple(torch.cat([k_cache, k_new], dim=dim).shape))
            except RuntimeError as exc:
                print(f"dim={dim}: torch.cat refuses -", str(exc).split(".")[0])
    """,
    "rope-on-values": """
        import torch
        def rope(x, pos):
            d = x.shape[-1]
            a = pos[:, None] * 10000.0 ** (-torch.arange(0, d, 2) / d)
            a = torch.cat([a, a], -1)
            return x * a.cos() + torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1) * a.sin()
        v = torch.ones(3, 4)                                       # three identical values
        pos = torch.tensor([0., 1., 2.])
        print("values as projected:", v[:, 0].tolist())
        print("values rotated:     ", [round(float(t), 3) for t in rope(v, pos)[:, 0]], "<- now depend on position")
    """,
    "cache-rerotated": """
        import math, torch
        def rot(x, pos):                                          # one pair, inv_freq = 1
            c, s = math.cos(pos), math.sin(pos)
            return torch.tensor([x[0] * c - x[1] * s, x[0] * s + x[1] * c])
        k = torch.tensor([1.0, 0.0])
        cached = rot(k, 3)                                         # stored when token 3 was new
        show = lambda t: [round(float(x), 3) for x in t]
        print("cached key (rotated at 3):  ", show(cached))
        print("rotated again at 3:         ", show(rot(cached, 3)), "<- as if at position 6")
        print("rotated once at 6:          ", show(rot(k, 6)))
    """,
    "mla-absorb-wrong-slice": """
        import torch
        H, nope, v, r = 2, 2, 3, 1
        rows = torch.arange(H * (nope + v)).view(-1, r)            # kv_b_proj.weight rows, per head [k | v]
        w = rows.view(H, nope + v, r)
        print("per head: W_UK rows", w[:, :nope].flatten().tolist(), " W_UV rows", w[:, nope:].flatten().tolist())
        print("flat:     W_UK rows", rows[: H * nope].flatten().tolist(), " W_UV rows", rows[H * nope:].flatten().tolist())
    """,
    "mla-cache-unnormalized": """
        import torch
        norm = torch.nn.RMSNorm(4, eps=1e-6)
        with torch.no_grad():
            norm.weight.copy_(torch.tensor([0.5, 1.0, 1.5, 2.0]))   # a trained norm weight
        c_kv = torch.tensor([8.0, -1.5, -11.0, 3.0])
        show = lambda t: [round(float(x), 2) for x in t]
        with torch.no_grad():
            print("c_kv from kv_a_proj (raw): ", show(c_kv))
            print("kv_a_norm(c_kv), cached:   ", show(norm(c_kv)))
            print("normalised again on read:  ", show(norm(norm(c_kv))), "<- not the same latent")
    """,
    "mla-materializes-cache-heads": """
        H, P, r, nope, v, rope = 128, 32_768, 512, 128, 128, 64   # DeepSeek-V2 sizes, one layer
        naive = P * H * (nope + v)                                  # kv_b_proj on every cached latent
        absorbed = P * (r + rope) + H * (nope + r)                  # the cache itself + the absorbed query
        print(f"naive decoding step builds  {naive:>13,} numbers")
        print(f"absorbed step reads         {absorbed:>13,} numbers ({naive / absorbed:.0f}x less)")
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
    # -- top-k / block-sparse / Longformer ------------------------------------------------
    "topk-before-mask": """
        import torch
        scores = torch.tensor([5.0, 4.0, 1.0, 0.0])           # one query, four keys
        mask = torch.tensor([False, True, True, True])         # key 0 may not be attended
        idx = scores.topk(2).indices                           # top-2 first: keys 0 and 1
        keep = torch.zeros(4, dtype=torch.bool).scatter(0, idx, True) & mask
        print("top-k, then mask:", keep.nonzero().flatten().tolist(), " <- only one key left")
        idx = scores.masked_fill(~mask, float("-inf")).topk(2).indices
        print("mask, then top-k:", sorted(idx.tolist()))
    """,
    "topk-softmax-not-renormalized": """
        import torch
        scores = torch.tensor([3.0, 2.0, 1.0, 0.0])
        keep = torch.tensor([True, True, False, False])       # top-2
        w = torch.softmax(scores, -1) * keep
        print("softmax over all, then zeroed:", w.numpy().round(3), " sum", round(float(w.sum()), 3))
        w = torch.softmax(scores.masked_fill(~keep, float("-inf")), -1)
        print("softmax over the kept only:   ", w.numpy().round(3), " sum", round(float(w.sum()), 3))
    """,
    "topk-wrong-dim": """
        import torch
        torch.manual_seed(0)
        scores = torch.randn(5, 7)                             # (L queries, S keys)
        for dim in (-1, -2):
            keep = torch.zeros_like(scores, dtype=torch.bool).scatter(dim, scores.topk(2, dim=dim).indices, True)
            print(f"topk(2, dim={dim}): keys kept per query = {keep.sum(-1).tolist()}")
    """,
    "topk-keeps-masked": """
        import torch
        raw = torch.tensor([4.0, 3.0, 2.0, 1.0])
        mask = torch.tensor([False, False, True, False])       # this query may attend key 2 only
        masked = raw.masked_fill(~mask, float("-inf"))
        vals, idx = masked.topk(3)                             # fills the 3 places with masked keys
        keep = torch.zeros(4, dtype=torch.bool).scatter(0, idx, True)
        print("softmax(raw scores of the kept set):", torch.softmax(raw.masked_fill(~keep, float("-inf")), -1).numpy().round(3))
        print("softmax(values topk returned):      ", torch.softmax(torch.full((4,), float("-inf")).scatter(0, idx, vals), -1).numpy().round(3))
    """,
    "topk-off-by-one": """
        import torch
        scores = torch.tensor([0.9, 0.1, 0.7, 0.3, 0.5])
        kth = scores.topk(3).values[-1]                        # the 3rd largest, 0.5
        print("scores >= kth keeps", int((scores >= kth).sum()), "keys")
        print("scores >  kth keeps", int((scores > kth).sum()), "keys")
    """,
    "global-one-direction": """
        import torch
        L, w = 6, 1
        i = torch.arange(L)
        band = (i[:, None] - i[None, :]).abs() <= w
        g = torch.zeros(L, dtype=torch.bool); g[0] = True   # position 0 is global
        for name, m in [("rows only", band | g[:, None]), ("columns only", band | g[None, :]),
                        ("both", band | g[:, None] | g[None, :])]:
            print(f"{name:12s} row 0 sees {int(m[0].sum())} keys, key 0 seen by {int(m[:, 0].sum())} queries")
    """,
    "window-in-tokens": """
        import torch
        L, block, window = 8, 2, 1
        t = torch.arange(L)
        blocks = ((t[:, None] // block) - (t[None, :] // block)).abs() <= window
        tokens = (t[:, None] - t[None, :]).abs() <= window
        print("keys per query, window in blocks:", blocks.sum(1).tolist())
        print("keys per query, window in tokens:", tokens.sum(1).tolist())
    """,
    "random-blocks-transposed": """
        import torch
        nb = 4
        random_blocks = torch.tensor([[3], [3], [0], [1]])    # block 0 also attends block 3, ...
        right = torch.zeros(nb, nb, dtype=torch.bool).scatter(1, random_blocks, True)
        print("rows (query blocks) -> random key blocks:")
        print(right.int())
        print("transposed (what layout[random_blocks[i], i] gives):")
        print(right.T.int())
    """,
    "last-block-dropped": """
        L, block = 13, 4
        print("L // block       =", L // block, "blocks cover tokens 0 ..", (L // block) * block - 1)
        print("ceil(L / block)  =", -(-L // block), "blocks cover tokens 0 ..", L - 1)
    """,
    "block-window-off-by-one": """
        import torch
        nb, window = 6, 1
        i = torch.arange(nb)
        for name, m in [("<=", (i[:, None] - i[None, :]).abs() <= window), ("< ", (i[:, None] - i[None, :]).abs() < window)]:
            print(f"|i - j| {name} window: key blocks per query block = {m.sum(1).tolist()}")
    """,
    "longformer-window-as-total": """
        window = 256                                           # this kata's per-side w
        print("keys per query, w on each side:   ", 2 * window + 1)
        print("keys per query, w // 2 on each side:", 2 * (window // 2) + 1)
    """,
    "padding-ignores-global": """
        import torch
        L = 6
        g = torch.tensor([5])                                  # a global token at the end ...
        real = torch.tensor([True, True, True, True, False, False])   # ... that is padding
        i = torch.arange(L)
        allowed = ((i[:, None] - i[None, :]).abs() <= 1) | torch.isin(i, g)[:, None] | torch.isin(i, g)[None, :]
        print("band only padded: query 0 sees", (allowed[0] & (real | torch.isin(i, g))).nonzero().flatten().tolist())
        print("all keys padded:  query 0 sees", (allowed[0] & real).nonzero().flatten().tolist())
    """,
    # -- FlashAttention ---------------------------------------------------------------------
    "materializes-full-scores": """
        L = S = 4096
        tile = 128
        print(f"full score matrix : {L * S:>12,} elements")
        print(f"one 128 x 128 tile: {tile * tile:>12,} elements ({L * S // (tile * tile)} times fewer)")
    """,
    "online-softmax-no-rescale": """
        import torch
        s = torch.tensor([1.0, 2.0, 5.0, 6.0]); v = torch.tensor([10.0, 20.0, 30.0, 40.0])
        print("softmax(s) @ v             ", round((torch.softmax(s, 0) @ v).item(), 4))
        for rescale in (True, False):
            m, l, acc = float("-inf"), 0.0, 0.0
            for tile in (slice(0, 2), slice(2, 4)):          # two key tiles
                m_new = max(m, s[tile].max().item())
                alpha = torch.exp(torch.tensor(m - m_new)).item()
                p = torch.exp(s[tile] - m_new)
                l = alpha * l + p.sum().item()
                acc = (alpha if rescale else 1.0) * acc + (p @ v[tile]).item()
                m = m_new
            print(f"acc rescaled={rescale!s:5}         ", round(acc / l, 4))
    """,
    "online-softmax-sum-not-rescaled": """
        import torch
        s = torch.tensor([1.0, 2.0, 5.0, 6.0]); v = torch.tensor([10.0, 20.0, 30.0, 40.0])
        print("softmax(s) @ v             ", round((torch.softmax(s, 0) @ v).item(), 4))
        for rescale in (True, False):
            m, l, acc = float("-inf"), 0.0, 0.0
            for tile in (slice(0, 2), slice(2, 4)):
                m_new = max(m, s[tile].max().item())
                alpha = torch.exp(torch.tensor(m - m_new)).item()
                p = torch.exp(s[tile] - m_new)
                l = (alpha if rescale else 1.0) * l + p.sum().item()
                acc = alpha * acc + (p @ v[tile]).item()
                m = m_new
            print(f"sum rescaled={rescale!s:5}  l={l:.4f}", round(acc / l, 4))
    """,
    "flash-max-init-zero": """
        import torch
        s = torch.tensor([-1000.0, -1001.0, -1003.0], dtype=torch.float64)   # every score far below 0
        for m0 in (float("-inf"), 0.0):
            m = max(m0, s.max().item())
            l = torch.exp(s - m).sum().item()
            print(f"max started at {m0:5}: m = {m:8.1f}, sum of exp(s - m) = {l:.4g}")
    """,
    "flash-empty-block-nan": """
        import torch
        s = torch.full((3,), float("-inf"))                 # a tile in which this row may see no key
        m_new = torch.maximum(torch.tensor(float("-inf")), s.max())
        print("exp(s - m_new)       :", torch.exp(s - m_new).tolist())
        shift = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        print("exp(s - shift), 0 for -inf:", torch.exp(s - shift).tolist())
    """,
    "flash-tail-block-dropped": """
        S, block_k = 27, 8
        print("range(0, S - block_k + 1, block_k):", [(j, min(j + block_k, S) - 1) for j in range(0, S - block_k + 1, block_k)])
        print("range(0, S, block_k)              :", [(j, min(j + block_k, S) - 1) for j in range(0, S, block_k)])
    """,
    "lse-wrong": """
        import torch
        s = torch.tensor([2.0, 1.0, 0.5])
        m = s.max(); l = torch.exp(s - m).sum()
        print("logsumexp(s)  ", round(torch.logsumexp(s, 0).item(), 4))
        print("m + log(l)    ", round((m + torch.log(l)).item(), 4))
        print("m alone       ", round(m.item(), 4))
        print("log(l) alone  ", round(torch.log(l).item(), 4))
    """,
    "flash-bwd-missing-delta": """
        import torch
        s = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
        dp = torch.tensor([3.0, 2.0, 4.0])                 # dL/dP for one row
        p = torch.softmax(s, 0)
        (p * dp).sum().backward()
        pd = p.detach()
        print("autograd dS       ", s.grad.numpy().round(4))
        print("P * (dP - D)      ", (pd * (dp - (pd * dp).sum())).numpy().round(4))
        print("P * dP (no D)     ", (pd * dp).numpy().round(4))
    """,
    "flash-bwd-missing-scale": """
        import math, torch
        torch.manual_seed(0)
        d = 64; scale = 1 / math.sqrt(d)
        q = torch.randn(1, d, requires_grad=True); k = torch.randn(3, d)
        torch.softmax(scale * q @ k.T, -1)[0, 0].backward()
        ds = torch.softmax(scale * q @ k.T, -1).detach()
        ds = ds * (torch.tensor([[1.0, 0, 0]]) - ds[:, :1])
        print("autograd dq[:3]      ", q.grad[0, :3].numpy().round(4))
        print("scale * dS @ k [:3]  ", (scale * ds @ k)[0, :3].numpy().round(4))
        print("dS @ k (no scale)[:3]", (ds @ k)[0, :3].numpy().round(4))
    """,
    "flash-bwd-renormalizes-per-tile": """
        import torch
        s = torch.tensor([1.0, 2.0, 3.0, 0.0])
        lse = torch.logsumexp(s, 0)
        print("P of tile keys 0..1 from lse :", torch.exp(s[:2] - lse).numpy().round(4))
        print("softmax of that tile alone   :", torch.softmax(s[:2], 0).numpy().round(4))
    """,
    "flash-bwd-nan-empty-rows": """
        import torch
        s = torch.full((3,), float("-inf"))                 # a query with no allowed key
        lse = torch.logsumexp(s, 0)
        print("lse =", lse.item(), "  exp(s - lse) =", torch.exp(s - lse).tolist())
        safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
        print("lse -> 0 first: exp(s - 0) =", torch.exp(s - safe).tolist())
    """,
    "flash-bwd-dk-dv-transposed": """
        import torch
        p = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])   # (2 queries, 3 keys)
        dout = torch.tensor([[1.0], [2.0]])                      # (2 queries, dv = 1)
        print("dV = P^T @ dout, one row per key:", (p.T @ dout).flatten().tolist())
        try:
            p @ dout
        except RuntimeError as exc:
            print("P @ dout:", str(exc).split(" (")[0])
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
