import math, torch

torch.manual_seed(0)
d = 16
q, k = torch.randn(1, d), torch.randn(5, d)
scores = q @ k.T
print("scores / sqrt(d):", torch.softmax(scores / math.sqrt(d), -1).numpy().round(3))
print("scores * sqrt(d):", torch.softmax(scores * math.sqrt(d), -1).numpy().round(3))
