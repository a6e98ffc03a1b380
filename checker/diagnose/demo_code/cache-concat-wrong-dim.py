import torch

k_cache = torch.zeros(2, 3, 5, 8)  # (B, Hkv, P, d)
k_new = torch.zeros(2, 3, 1, 8)  # one new token
print("dim=2:", tuple(torch.cat([k_cache, k_new], dim=2).shape), "<- (B, Hkv, P + 1, d)")
for dim in (1, -1):
    try:
        print(f"dim={dim}:", tuple(torch.cat([k_cache, k_new], dim=dim).shape))
    except RuntimeError as exc:
        print(f"dim={dim}: torch.cat refuses -", str(exc).split(".")[0])
