import torch

scores = torch.zeros(1, 5)
keep = torch.arange(5) < 3  # 3 real keys, 2 padding: True = may attend
print("mask                       ", keep.int().tolist())
print(
    "masked_fill(~mask, -inf)   ",
    torch.softmax(scores.masked_fill(~keep, float("-inf")), -1).numpy().round(3),
)
print(
    "masked_fill(mask, -inf)    ",
    torch.softmax(scores.masked_fill(keep, float("-inf")), -1).numpy().round(3),
)
