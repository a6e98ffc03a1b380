import torch

D, H, Hkv = 64, 8, 2
d = D // H
print("q_proj:", tuple(torch.nn.Linear(D, H * d).weight.shape))
print("k_proj:", tuple(torch.nn.Linear(D, Hkv * d).weight.shape), "(not", (H * d, D), ")")
