B, max_blocks, block_size, Hkv, d = 32, 128, 16, 2, 64
lens = [2000] + [60] * (B - 1)  # one long sequence, 31 short ones
dense = B * max_blocks * block_size * Hkv * d
used = sum(-(-n // block_size) for n in lens) * block_size * Hkv * d
longest = -(-max(lens) // block_size) * block_size * Hkv * d
print(f"k_cache[block_table]      : {dense:>10,} elements")
print(f"the blocks the batch uses : {used:>10,} elements")
print(f"one sequence at a time    : {longest:>10,} elements at most")
