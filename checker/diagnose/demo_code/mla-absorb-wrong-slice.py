import torch

H, nope, v, r = 2, 2, 3, 1
rows = torch.arange(H * (nope + v)).view(-1, r)  # kv_b_proj.weight rows, per head [k | v]
w = rows.view(H, nope + v, r)
print(
    "per head: W_UK rows",
    w[:, :nope].flatten().tolist(),
    " W_UV rows",
    w[:, nope:].flatten().tolist(),
)
print(
    "flat:     W_UK rows",
    rows[: H * nope].flatten().tolist(),
    " W_UV rows",
    rows[H * nope :].flatten().tolist(),
)
