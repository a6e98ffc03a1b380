import math

d, m, dist, qk = 64, 0.5, 4, 8.0
scale = 1 / math.sqrt(d)
print("scale * q.k - m * dist  :", scale * qk - m * dist, "<- penalty 2.0")
print("(q.k - m * dist) * scale:", (qk - m * dist) * scale, "<- penalty 0.25: slope / sqrt(d)")
