import torch

nb, window = 6, 1
i = torch.arange(nb)
for name, m in [
    ("<=", (i[:, None] - i[None, :]).abs() <= window),
    ("< ", (i[:, None] - i[None, :]).abs() < window),
]:
    print(f"|i - j| {name} window: key blocks per query block = {m.sum(1).tolist()}")
