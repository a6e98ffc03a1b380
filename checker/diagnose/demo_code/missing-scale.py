import math, torch

torch.manual_seed(0)
d = 256
q, k = torch.randn(1, d), torch.randn(6, d)
scores = q @ k.T
print("softmax(q.k)          ", torch.softmax(scores, -1).numpy().round(3))
print("softmax(q.k / sqrt(d))", torch.softmax(scores / math.sqrt(d), -1).numpy().round(3))
