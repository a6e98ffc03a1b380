import torch

p = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])  # (2 queries, 3 keys)
dout = torch.tensor([[1.0], [2.0]])  # (2 queries, dv = 1)
print("dV = P^T @ dout, one row per key:", (p.T @ dout).flatten().tolist())
try:
    p @ dout
except RuntimeError as exc:
    print("P @ dout:", str(exc).split(" (")[0])
