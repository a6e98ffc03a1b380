import torch

s = torch.tensor([1.0, 2.0, 5.0, 6.0])
v = torch.tensor([10.0, 20.0, 30.0, 40.0])
print("softmax(s) @ v             ", round((torch.softmax(s, 0) @ v).item(), 4))
for rescale in (True, False):
    m, l, acc = float("-inf"), 0.0, 0.0
    for tile in (slice(0, 2), slice(2, 4)):  # two key tiles
        m_new = max(m, s[tile].max().item())
        alpha = torch.exp(torch.tensor(m - m_new)).item()
        p = torch.exp(s[tile] - m_new)
        l = alpha * l + p.sum().item()
        acc = (alpha if rescale else 1.0) * acc + (p @ v[tile]).item()
        m = m_new
    print(f"acc rescaled={rescale!s:5}         ", round(acc / l, 4))
