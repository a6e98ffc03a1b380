import torch

s = torch.tensor([2.0, 1.0, 0.5])
m = s.max()
l = torch.exp(s - m).sum()
print("logsumexp(s)  ", round(torch.logsumexp(s, 0).item(), 4))
print("m + log(l)    ", round((m + torch.log(l)).item(), 4))
print("m alone       ", round(m.item(), 4))
print("log(l) alone  ", round(torch.log(l).item(), 4))
