import torch

base = torch.arange(12.0).view(4, 3)
x = base.t()  # a (3, 4) view: x.stride() = (1, 3), the same memory as `base`
memory = base.flatten()  # what a kernel's pointer arithmetic walks over
row, n_cols = 1, 4
cols = torch.arange(n_cols)
print("x[1]                          =", x[1].tolist())
print("row * n_cols + col reads      =", memory[row * n_cols + cols].tolist())
print("row * stride0 + col * stride1 =", memory[row * x.stride(0) + cols * x.stride(1)].tolist())
