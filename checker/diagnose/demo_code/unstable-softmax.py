import torch

scores = torch.tensor([[1000.0, 999.0, 0.0]])
e = torch.exp(scores)
print("exp(scores)                 ", e)
print("exp / sum  (no max shift)   ", e / e.sum(-1, keepdim=True))
shifted = torch.exp(scores - scores.amax(-1, keepdim=True))
print("shifted by the row max      ", shifted / shifted.sum(-1, keepdim=True))
