import math, torch

torch.manual_seed(0)
d = 64
scale = 1 / math.sqrt(d)
q = torch.randn(1, d, requires_grad=True)
k = torch.randn(3, d)
torch.softmax(scale * q @ k.T, -1)[0, 0].backward()
ds = torch.softmax(scale * q @ k.T, -1).detach()
ds = ds * (torch.tensor([[1.0, 0, 0]]) - ds[:, :1])
print("autograd dq[:3]      ", q.grad[0, :3].numpy().round(4))
print("scale * dS @ k [:3]  ", (scale * ds @ k)[0, :3].numpy().round(4))
print("dS @ k (no scale)[:3]", (ds @ k)[0, :3].numpy().round(4))
