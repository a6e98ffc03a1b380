import torch

torch.manual_seed(0)
c_kv = torch.randn(4, 512) * 7.0  # the compressed latent, any scale
norm = torch.nn.RMSNorm(512, eps=1e-6)
print("RMS before norm:", c_kv.pow(2).mean(-1).sqrt().numpy().round(2))
print("RMS after norm: ", norm(c_kv).pow(2).mean(-1).sqrt().detach().numpy().round(2))
