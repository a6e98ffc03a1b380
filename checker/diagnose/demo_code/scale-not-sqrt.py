import math, torch

torch.manual_seed(0)
for d in (16, 256):
    dots = (torch.randn(20_000, d) * torch.randn(20_000, d)).sum(-1)
    print(
        f"d={d:4d}  std(q.k/sqrt(d)) = {(dots / math.sqrt(d)).std():.3f}   std(q.k/d) = {(dots / d).std():.3f}"
    )
