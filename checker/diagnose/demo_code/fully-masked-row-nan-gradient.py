import torch

scores = torch.tensor([[0.5, 1.0], [0.3, 0.1]], requires_grad=True)
bias = torch.tensor([[0.0, 0.0], [float("-inf"), float("-inf")]])  # row 1 fully masked
w = torch.nan_to_num(torch.softmax(scores + bias, -1))
print("forward:", w.detach())
w.sum().backward()
print("gradient:", scores.grad)
