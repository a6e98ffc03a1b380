import torch

L = S = 4
print("tril(diagonal=0):")
print(torch.ones(L, S, dtype=torch.bool).tril(0).int())
print("tril(diagonal=1): each query also reads the next token")
print(torch.ones(L, S, dtype=torch.bool).tril(1).int())
