import torch

scores = torch.zeros(2, 2)
mask = torch.tensor([[True, False], [True, True]])
caller = scores
scores.masked_fill_(~mask, float("-inf"))  # in place: the caller's tensor changes
print("caller's tensor after masked_fill_:", caller.tolist())
