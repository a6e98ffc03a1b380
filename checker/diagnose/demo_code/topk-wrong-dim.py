import torch

torch.manual_seed(0)
scores = torch.randn(5, 7)  # (L queries, S keys)
for dim in (-1, -2):
    keep = torch.zeros_like(scores, dtype=torch.bool).scatter(
        dim, scores.topk(2, dim=dim).indices, True
    )
    print(f"topk(2, dim={dim}): keys kept per query = {keep.sum(-1).tolist()}")
