import torch

scores = torch.tensor([3.0, 2.0, 1.0, 0.0])
keep = torch.tensor([True, True, False, False])  # top-2
w = torch.softmax(scores, -1) * keep
print("softmax over all, then zeroed:", w.numpy().round(3), " sum", round(float(w.sum()), 3))
w = torch.softmax(scores.masked_fill(~keep, float("-inf")), -1)
print("softmax over the kept only:   ", w.numpy().round(3), " sum", round(float(w.sum()), 3))
