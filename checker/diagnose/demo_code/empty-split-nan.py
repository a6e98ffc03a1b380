import torch

s = torch.full((3,), float("-inf"))  # a split with no key of this sequence
out_c = torch.softmax(s, 0) @ torch.ones(3)
print("softmax over the empty split :", out_c.item())
print("its weight exp(-inf - lse)   :", torch.exp(torch.tensor(float("-inf"))).item())
print("0 * NaN in the merge         :", (torch.tensor(0.0) * out_c).item())
