import warnings, torch

warnings.simplefilter("ignore")
k = torch.zeros(2, 3, 7, 8)  # (B, H, S, d)
print("k.T                ", tuple(k.T.shape))
print("k.transpose(-2, -1)", tuple(k.transpose(-2, -1).shape))
print("k.mT               ", tuple(k.mT.shape))
