import torch

L, block, window = 8, 2, 1
t = torch.arange(L)
blocks = ((t[:, None] // block) - (t[None, :] // block)).abs() <= window
tokens = (t[:, None] - t[None, :]).abs() <= window
print("keys per query, window in blocks:", blocks.sum(1).tolist())
print("keys per query, window in tokens:", tokens.sum(1).tolist())
