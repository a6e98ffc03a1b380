import torch

H, d = 2, 3
D = H * d
rows = torch.arange(3 * D)  # row i of a fused Linear(D, 3D) weight
q, k, v = rows.split(D)  # [q; k; v]: GPT-2's c_attn
print("[q; k; v]      q rows:", q.tolist())
q, k, v = rows.view(H, 3, d).unbind(1)  # per head [q_h | k_h | v_h]: GPT-NeoX
print("per head (NeoX) q rows:", q.flatten().tolist())
