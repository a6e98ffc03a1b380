import torch

scores = torch.tensor([0.9, 0.1, 0.7, 0.3, 0.5])
kth = scores.topk(3).values[-1]  # the 3rd largest, 0.5
print("scores >= kth keeps", int((scores >= kth).sum()), "keys")
print("scores >  kth keeps", int((scores > kth).sum()), "keys")
