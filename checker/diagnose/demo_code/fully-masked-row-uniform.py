import torch

v = torch.tensor([[1.0], [2.0], [3.0], [6.0]])  # mean of V = 3.0
scores = torch.tensor([[0.5, 1.0, 2.0, 0.1]])
mask = torch.zeros(1, 4, dtype=torch.bool)  # this query may attend nothing
w = torch.softmax(scores.masked_fill(~mask, -1e9), -1)
print("-1e9 fill: weights", w.numpy().round(3), "-> output", (w @ v).item())
s = scores.masked_fill(~mask, float("-inf"))
m = s.amax(-1, keepdim=True)
e = torch.exp(s - torch.where(torch.isfinite(m), m, torch.zeros_like(m)))
z = e.sum(-1, keepdim=True)
w = e / torch.where(z > 0, z, torch.ones_like(z))
print("-inf + guard: weights", w.numpy().round(3), "-> output", (w @ v).item())
