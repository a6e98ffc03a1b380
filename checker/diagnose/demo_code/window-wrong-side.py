import torch

L = S = 5
p, j = torch.arange(L)[:, None], torch.arange(S)[None, :]
print("window (2, 0): the 3 most recent keys")
print(((j >= p - 2) & (j <= p)).int())
print("window (0, 2): the next 3 keys")
print(((j >= p) & (j <= p + 2)).int())
