import torch

H, Hkv = 6, 2
kv = torch.arange(Hkv).view(1, Hkv, 1, 1)  # KV head h holds the label h
g = H // Hkv
print("repeat(1, g, 1, 1)       :", kv.repeat(1, g, 1, 1).flatten().tolist())
print("repeat_interleave(g, 1)  :", kv.repeat_interleave(g, dim=1).flatten().tolist())
print("query head h should read : ", [h // g for h in range(H)])
