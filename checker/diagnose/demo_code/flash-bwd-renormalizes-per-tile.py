import torch

s = torch.tensor([1.0, 2.0, 3.0, 0.0])
lse = torch.logsumexp(s, 0)
print("P of tile keys 0..1 from lse :", torch.exp(s[:2] - lse).numpy().round(4))
print("softmax of that tile alone   :", torch.softmax(s[:2], 0).numpy().round(4))
