import torch

out = torch.zeros(2, 4, 3, 8).transpose(1, 2)  # (B, L, H, d), not contiguous
try:
    out.view(2, 3, 32)
except RuntimeError as exc:
    print("view:", str(exc).split(". ")[0])
print("contiguous().view:", tuple(out.contiguous().view(2, 3, 32).shape))
print("reshape:          ", tuple(out.reshape(2, 3, 32).shape))
