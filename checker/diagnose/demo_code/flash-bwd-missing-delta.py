import torch

s = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
dp = torch.tensor([3.0, 2.0, 4.0])  # dL/dP for one row
p = torch.softmax(s, 0)
(p * dp).sum().backward()
pd = p.detach()
print("autograd dS       ", s.grad.numpy().round(4))
print("P * (dP - D)      ", (pd * (dp - (pd * dp).sum())).numpy().round(4))
print("P * dP (no D)     ", (pd * dp).numpy().round(4))
