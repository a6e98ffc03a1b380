import torch

L = S = 4
print("tril(diagonal=0): a token sees itself")
print(torch.ones(L, S, dtype=torch.bool).tril(0).int())
print("tril(diagonal=-1): row 0 has no key at all")
print(torch.ones(L, S, dtype=torch.bool).tril(-1).int())
