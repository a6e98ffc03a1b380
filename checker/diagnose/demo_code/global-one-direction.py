import torch

L, w = 6, 1
i = torch.arange(L)
band = (i[:, None] - i[None, :]).abs() <= w
g = torch.zeros(L, dtype=torch.bool)
g[0] = True  # position 0 is global
for name, m in [
    ("rows only", band | g[:, None]),
    ("columns only", band | g[None, :]),
    ("both", band | g[:, None] | g[None, :]),
]:
    print(
        f"{name:12s} row 0 sees {int(m[0].sum())} keys, key 0 seen by {int(m[:, 0].sum())} queries"
    )
