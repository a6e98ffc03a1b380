import math, torch


def rot(x, pos):  # one pair, inv_freq = 1
    c, s = math.cos(pos), math.sin(pos)
    return torch.tensor([x[0] * c - x[1] * s, x[0] * s + x[1] * c])


raw = torch.tensor([1.0, 0.0])
e, j = 2, 5  # two tokens evicted: the key at index 5 moves to slot 3
cached = rot(raw, j)
show = lambda t: [round(float(x), 3) for x in t]
print("rotated by -e:", show(rot(cached, -e)), "== rotated at j - e = 3:", show(rot(raw, j - e)))
print("rotated by +e:", show(rot(cached, +e)), "== rotated at j + e = 7:", show(rot(raw, j + e)))
