import torch
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.ones(1, 6)
drop = torch.nn.Dropout(0.5).eval()
print("F.dropout(x, 0.5)           :", F.dropout(x, 0.5).tolist())
print("nn.Dropout(0.5) in eval mode:", drop(x).tolist())
