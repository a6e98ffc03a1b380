import torch

B, L, H, d = 1, 3, 2, 2
# feature value = 10 * token + feature index, so each number says where it came from
x = torch.arange(L)[:, None] * 10 + torch.arange(H * d)[None, :]
x = x.view(B, L, H * d)
print("view(B, H, L, d), head 0:")
print(x.view(B, H, L, d)[0, 0])
print("view(B, L, H, d).transpose(1, 2), head 0:")
print(x.view(B, L, H, d).transpose(1, 2)[0, 0])
