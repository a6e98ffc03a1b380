import torch

L, S = 2, 5  # 2 new queries, 5 keys in the KV cache
print("top-left  tril():", torch.ones(L, S, dtype=torch.bool).tril().int().tolist())
print("bottom-right tril(S - L):", torch.ones(L, S, dtype=torch.bool).tril(S - L).int().tolist())
