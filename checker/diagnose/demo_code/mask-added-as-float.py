import torch

scores = torch.zeros(1, 4)
mask = torch.tensor([[True, True, False, False]])
print("scores + mask         ", torch.softmax(scores + mask, -1).numpy().round(3))
print(
    "masked_fill(~mask,-inf)",
    torch.softmax(scores.masked_fill(~mask, float("-inf")), -1).numpy().round(3),
)
