import math, torch

a, b, angle = 1.0, 0.0, math.pi / 2  # a pair (1, 0) turned by +90 degrees
c, s = math.cos(angle), math.sin(angle)
print(
    "(a cos - b sin, a sin + b cos):",
    (round(a * c - b * s, 3), round(a * s + b * c, 3)),
    "<- (0, 1)",
)
x = torch.tensor([a, b])
x1, x2 = x.chunk(2)
wrong = x * c + torch.cat([x2, -x1]) * s  # rotate_half with the sign on the wrong half
print(
    "cat(x2, -x1) instead of cat(-x2, x1):",
    wrong.numpy().round(3).tolist(),
    "<- turned by -90 degrees",
)
