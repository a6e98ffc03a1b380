import torch

s = torch.tensor([4.0, 3.0, 0.0, -1.0])  # one query's scores over 4 keys
v = torch.tensor([1.0, 2.0, 3.0, 4.0])
print("softmax over all keys       :", round(float(torch.softmax(s, 0) @ v), 4))
out_c = torch.stack([torch.softmax(s[i : i + 2], 0) @ v[i : i + 2] for i in (0, 2)])
lse_c = torch.stack([torch.logsumexp(s[i : i + 2], 0) for i in (0, 2)])
print("two splits, averaged        :", round(float(out_c.mean()), 4))
w = torch.exp(lse_c - torch.logsumexp(lse_c, 0))
print("weighted by exp(lse_c - lse):", round(float(w @ out_c), 4))
print("the splits' weights         :", [round(x, 4) for x in w.tolist()])
