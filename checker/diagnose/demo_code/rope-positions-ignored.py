import torch

inv_freq = 10000.0 ** (-torch.arange(0, 4, 2) / 4)
positions = torch.tensor([7, 8, 9])  # 3 new tokens after 7 cached ones
print("angles from positions:      ", (positions[:, None] * inv_freq)[:, 0].tolist())
print(
    "angles from arange(L):      ",
    (torch.arange(3)[:, None] * inv_freq)[:, 0].tolist(),
    "<- as if at 0, 1, 2",
)
