import torch


def rope(x, pos):
    d = x.shape[-1]
    a = pos[:, None] * 10000.0 ** (-torch.arange(0, d, 2) / d)
    a = torch.cat([a, a], -1)
    return x * a.cos() + torch.cat([-x[..., d // 2 :], x[..., : d // 2]], -1) * a.sin()


v = torch.ones(3, 4)  # three identical values
pos = torch.tensor([0.0, 1.0, 2.0])
print("values as projected:", v[:, 0].tolist())
print(
    "values rotated:     ",
    [round(float(t), 3) for t in rope(v, pos)[:, 0]],
    "<- now depend on position",
)
