import torch

B, H, L, d = 1, 2, 3, 2
# value = 100 * head + 10 * token + feature
out = (
    torch.arange(H)[:, None, None] * 100
    + torch.arange(L)[None, :, None] * 10
    + torch.arange(d)[None, None, :]
).view(B, H, L, d)
print("reshape(B, L, H*d), token 0:", out.reshape(B, L, H * d)[0, 0].tolist())
print("transpose(1, 2) first      :", out.transpose(1, 2).reshape(B, L, H * d)[0, 0].tolist())
