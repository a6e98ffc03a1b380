import torch

L = S = 4
print("allowed = tril (j <= p):")
print(torch.ones(L, S, dtype=torch.bool).tril().int())
print("inverted = triu(1) (j > p): the future")
print(torch.ones(L, S, dtype=torch.bool).triu(1).int())
