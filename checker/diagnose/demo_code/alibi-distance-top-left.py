import torch

L, S, m = 2, 6, 0.5  # two new queries after four cached keys
j = torch.arange(S)
for name, pos in (
    ("p = S - L + i", torch.arange(S - L, S)),
    ("p = i (row index)", torch.arange(L)),
):
    bias = -m * (pos[:, None] - j[None, :]).abs() + 0.0  # + 0.0: no "-0.0"
    print(f"{name}: last query's bias over keys 0..5 =", bias[-1].tolist())
