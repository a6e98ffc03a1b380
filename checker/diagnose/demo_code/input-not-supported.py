import torch


def masked(scores, mask):
    B, _, L, S = mask.shape  # written for (B, 1, L, S) masks only
    return scores.masked_fill(~mask, float("-inf"))


scores = torch.zeros(2, 3, 4, 4)  # (B, H, L, S)
for shape in ((2, 1, 4, 4), (4, 4), (2, 1, 1, 4)):
    try:
        print(shape, "->", tuple(masked(scores, torch.ones(shape, dtype=torch.bool)).shape))
    except ValueError as exc:
        print(shape, "-> ValueError:", exc)
