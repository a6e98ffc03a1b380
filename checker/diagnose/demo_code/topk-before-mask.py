import torch

scores = torch.tensor([5.0, 4.0, 1.0, 0.0])  # one query, four keys
mask = torch.tensor([False, True, True, True])  # key 0 may not be attended
idx = scores.topk(2).indices  # top-2 first: keys 0 and 1
keep = torch.zeros(4, dtype=torch.bool).scatter(0, idx, True) & mask
print("top-k, then mask:", keep.nonzero().flatten().tolist(), " <- only one key left")
idx = scores.masked_fill(~mask, float("-inf")).topk(2).indices
print("mask, then top-k:", sorted(idx.tolist()))
