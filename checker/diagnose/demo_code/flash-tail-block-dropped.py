S, block_k = 27, 8
print(
    "range(0, S - block_k + 1, block_k):",
    [(j, min(j + block_k, S) - 1) for j in range(0, S - block_k + 1, block_k)],
)
print(
    "range(0, S, block_k)              :",
    [(j, min(j + block_k, S) - 1) for j in range(0, S, block_k)],
)
