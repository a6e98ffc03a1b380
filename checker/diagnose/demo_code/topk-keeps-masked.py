import torch

raw = torch.tensor([4.0, 3.0, 2.0, 1.0])
mask = torch.tensor([False, False, True, False])  # this query may attend key 2 only
masked = raw.masked_fill(~mask, float("-inf"))
vals, idx = masked.topk(3)  # fills the 3 places with masked keys
keep = torch.zeros(4, dtype=torch.bool).scatter(0, idx, True)
print(
    "softmax(raw scores of the kept set):",
    torch.softmax(raw.masked_fill(~keep, float("-inf")), -1).numpy().round(3),
)
print(
    "softmax(values topk returned):      ",
    torch.softmax(torch.full((4,), float("-inf")).scatter(0, idx, vals), -1).numpy().round(3),
)
