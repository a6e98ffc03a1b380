import torch

row = torch.tensor([-3.0, -2.0, -1.0])  # C = 3 values in a tile of 4 lanes
for other in (0.0, float("-inf")):
    tile = torch.cat([row, torch.tensor([other])])  # what tl.load(..., mask, other=...) returns
    e = torch.exp(tile - tile.max())
    print(f"other={other}: softmax of the row = {(e[:3] / e.sum()).numpy().round(4)}")
print("expected                    =", torch.softmax(row, 0).numpy().round(4))
