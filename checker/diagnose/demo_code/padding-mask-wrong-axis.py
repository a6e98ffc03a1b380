import torch

B, H, L, S = 2, 1, 2, 2  # B == L: shapes fit, meaning does not
keep = torch.tensor([[True, False], [True, True]])  # (B, S): batch 0 has 1 real key
scores = torch.zeros(B, H, L, S)
right = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
wrong = scores.masked_fill(~keep, float("-inf"))  # (B, S) broadcasts as (1, 1, B, S)
print("batch 0, (B,1,1,S):", right[0, 0].tolist())
print("batch 0, (B,S)    :", wrong[0, 0].tolist())
