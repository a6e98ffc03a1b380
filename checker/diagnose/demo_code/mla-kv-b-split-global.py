import torch

H, nope, v = 2, 2, 1
# per head: [k k v]; labels: 10 * head + (0 = key, 5 = value)
kv = torch.tensor([0, 0, 5, 10, 10, 15])
k_wrong, v_wrong = kv.split([H * nope, H * v])
print("global split  keys:", k_wrong.tolist(), " values:", v_wrong.tolist())
k_right, v_right = kv.view(H, nope + v).split([nope, v], dim=-1)
print("per-head split keys:", k_right.flatten().tolist(), " values:", v_right.flatten().tolist())
