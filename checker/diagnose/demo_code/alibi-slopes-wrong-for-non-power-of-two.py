import math

n = 12
c = 2 ** math.floor(math.log2(n))
right = [2 ** (-8 * (h + 1) / c) for h in range(c)] + [
    2 ** (-4 * (2 * t + 1) / c) for t in range(n - c)
]
wrong = [2 ** (-8 * (h + 1) / n) for h in range(n)]  # the power-of-two formula with n = 12
print("get_slopes(12)      :", [round(m, 4) for m in right])
print("2^(-8(h+1)/12)      :", [round(m, 4) for m in wrong])
