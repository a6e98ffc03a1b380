import torch

L = 6
g = torch.tensor([5])  # a global token at the end ...
real = torch.tensor([True, True, True, True, False, False])  # ... that is padding
i = torch.arange(L)
allowed = (
    ((i[:, None] - i[None, :]).abs() <= 1) | torch.isin(i, g)[:, None] | torch.isin(i, g)[None, :]
)
print(
    "band only padded: query 0 sees",
    (allowed[0] & (real | torch.isin(i, g))).nonzero().flatten().tolist(),
)
print("all keys padded:  query 0 sees", (allowed[0] & real).nonzero().flatten().tolist())
