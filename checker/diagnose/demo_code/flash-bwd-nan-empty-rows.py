import torch

s = torch.full((3,), float("-inf"))  # a query with no allowed key
lse = torch.logsumexp(s, 0)
print("lse =", lse.item(), "  exp(s - lse) =", torch.exp(s - lse).tolist())
safe = torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse))
print("lse -> 0 first: exp(s - 0) =", torch.exp(s - safe).tolist())
