import torch

scores = torch.tensor([[2.0, 1.0, 0.5, 0.1]])
mask = torch.tensor([[True, True, False, False]])
after = torch.softmax(scores, -1) * mask
before = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
print("mask after softmax :", after.numpy().round(3), "sum", round(after.sum().item(), 3))
print("mask before softmax:", before.numpy().round(3), "sum", round(before.sum().item(), 3))
