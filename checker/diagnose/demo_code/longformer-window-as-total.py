window = 256  # this kata's per-side w
print("keys per query, w on each side:   ", 2 * window + 1)
print("keys per query, w // 2 on each side:", 2 * (window // 2) + 1)
