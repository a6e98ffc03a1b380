import torch

B, H, Hkv, P, d = 1, 32, 8, 4096, 128
k = torch.zeros(B, Hkv, P, d, dtype=torch.float16, device="meta")
expanded = k.repeat_interleave(H // Hkv, dim=1)
mib = lambda t: t.numel() * t.element_size() / 2**20
print(f"cache with Hkv = {Hkv} heads: {tuple(k.shape)} {mib(k):.0f} MiB per layer for K")
print(
    f"cache of repeated heads:   {tuple(expanded.shape)} {mib(expanded):.0f} MiB  (H / Hkv = {H // Hkv} times more)"
)
