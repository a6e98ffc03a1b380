import torch

torch.manual_seed(0)


def rope(x, pos):  # rotate_half layout, one position
    half = x.shape[-1] // 2
    inv = 10000 ** (-torch.arange(half) / half)
    cos, sin = torch.cos(pos * inv).repeat(2), torch.sin(pos * inv).repeat(2)
    return x * cos + torch.cat([-x[half:], x[:half]]) * sin


q, k = torch.randn(8), torch.randn(8)
print("unrotated q.k          :", round((q @ k).item(), 4))
print(
    "rotated at positions 3,1:", round((rope(q, 3) @ rope(k, 1)).item(), 4), "(depends on position)"
)
