import torch

s = torch.full((3,), float("-inf"))  # a tile in which this row may see no key
m_new = torch.maximum(torch.tensor(float("-inf")), s.max())
print("exp(s - m_new)       :", torch.exp(s - m_new).tolist())
shift = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
print("exp(s - shift), 0 for -inf:", torch.exp(s - shift).tolist())
