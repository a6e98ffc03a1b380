import torch
import torch.nn.functional as F


def attend(w, v):
    return F.dropout(w, 0.5) @ v  # F.dropout defaults to training=True


w, v = torch.full((1, 4), 0.25), torch.arange(4.0).unsqueeze(1)
print(
    "call 1:",
    attend(w, v).item(),
    "  call 2:",
    attend(w, v).item(),
    "  without dropout:",
    (w @ v).item(),
)
