import torch

d, theta = 8, 10000.0
right = theta ** (-torch.arange(0, d, 2) / d)  # exponents 0, 2/d, 4/d, 6/d
wrong = theta ** (-torch.arange(d // 2) / d)  # exponents 0, 1/d, 2/d, 3/d
print("theta^(-2i/d):", right.numpy().round(4))
print("theta^(-i/d): ", wrong.numpy().round(4), "<- only pair 0 agrees")
