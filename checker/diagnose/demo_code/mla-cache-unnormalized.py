import torch

norm = torch.nn.RMSNorm(4, eps=1e-6)
with torch.no_grad():
    norm.weight.copy_(torch.tensor([0.5, 1.0, 1.5, 2.0]))  # a trained norm weight
c_kv = torch.tensor([8.0, -1.5, -11.0, 3.0])
show = lambda t: [round(float(x), 2) for x in t]
with torch.no_grad():
    print("c_kv from kv_a_proj (raw): ", show(c_kv))
    print("kv_a_norm(c_kv), cached:   ", show(norm(c_kv)))
    print("normalised again on read:  ", show(norm(norm(c_kv))), "<- not the same latent")
