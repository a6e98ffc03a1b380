import torch

torch.manual_seed(0)
scores = torch.randn(2, 3, 4, 5)  # (B, H, L, S)
for dim in (-1, -2, 1):
    w = torch.softmax(scores, dim=dim)
    print(f"dim={dim:2d}: sum over keys of query 0 = {w[0, 0, 0].sum():.3f}")
