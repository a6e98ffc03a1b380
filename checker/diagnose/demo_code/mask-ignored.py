import torch

scores = torch.zeros(1, 4)
mask = torch.tensor([[True, True, False, False]])
scores.masked_fill(~mask, float("-inf"))  # returns a new tensor, which is thrown away
print("not assigned:", torch.softmax(scores, -1).numpy().round(3))
scores = scores.masked_fill(~mask, float("-inf"))
print("assigned:    ", torch.softmax(scores, -1).numpy().round(3))
