import torch

s = torch.tensor([-1000.0, -1001.0, -1003.0], dtype=torch.float64)  # every score far below 0
for m0 in (float("-inf"), 0.0):
    m = max(m0, s.max().item())
    l = torch.exp(s - m).sum().item()
    print(f"max started at {m0:5}: m = {m:8.1f}, sum of exp(s - m) = {l:.4g}")
