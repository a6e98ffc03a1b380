import torch

q, k = torch.zeros(1, 8, 4, 16), torch.zeros(1, 2, 4, 16)
try:
    q @ k.transpose(-2, -1)
except RuntimeError as exc:
    print(exc)
print(tuple((q @ k.repeat_interleave(4, dim=1).transpose(-2, -1)).shape))
