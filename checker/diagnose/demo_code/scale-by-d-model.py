import math, torch

torch.manual_seed(0)
D, H = 64, 8
d = D // H  # head dim 8
q, k = torch.randn(100_000, d), torch.randn(100_000, d)
dots = (q * k).sum(-1)  # one head's q.k
print(f"std of q.k            {dots.std():.2f}   (about sqrt(d) = {math.sqrt(d):.2f})")
print(f"std of q.k / sqrt(d)  {(dots / math.sqrt(d)).std():.2f}   <- unit scale")
print(
    f"std of q.k / sqrt(D)  {(dots / math.sqrt(D)).std():.2f}   <- sqrt(H) = {math.sqrt(H):.2f} times too small"
)
