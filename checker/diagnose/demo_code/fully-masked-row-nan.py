import torch

scores = torch.tensor([[0.5, 1.0, 2.0], [0.3, 0.1, 0.2]])
mask = torch.tensor([[True, False, True], [False, False, False]])  # row 1: no key
print(torch.softmax(scores.masked_fill(~mask, float("-inf")), -1))
