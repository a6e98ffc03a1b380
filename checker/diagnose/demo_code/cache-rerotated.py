import math, torch


def rot(x, pos):  # one pair, inv_freq = 1
    c, s = math.cos(pos), math.sin(pos)
    return torch.tensor([x[0] * c - x[1] * s, x[0] * s + x[1] * c])


k = torch.tensor([1.0, 0.0])
cached = rot(k, 3)  # stored when token 3 was new
show = lambda t: [round(float(x), 3) for x in t]
print("cached key (rotated at 3):  ", show(cached))
print("rotated again at 3:         ", show(rot(cached, 3)), "<- as if at position 6")
print("rotated once at 6:          ", show(rot(k, 6)))
