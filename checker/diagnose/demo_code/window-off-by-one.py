import torch

L = S = 6
W = 3  # 3 keys including the query itself
p, j = torch.arange(L)[:, None], torch.arange(S)[None, :]
print("p - W < j <= p  (W keys):")
print(((j <= p) & (j > p - W)).int())
print("p - W <= j <= p (W + 1 keys):")
print(((j <= p) & (j >= p - W)).int())
