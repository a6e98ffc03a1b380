import torch

scores = torch.tensor([0.0, 0.0, 0.0, 3.0])  # the newest token, t = 3, scores highest
values = torch.tensor([1.0, 2.0, 3.0, 10.0])
n = 4  # context_lens counts the new token: it attends t = 0 .. 3
for name, keys in (("t < n    ", n), ("t < n - 1", n - 1)):
    w = torch.softmax(scores[:keys], dim=0)
    print(f"{name}: {keys} keys -> output {float(w @ values[:keys]):.3f}")
