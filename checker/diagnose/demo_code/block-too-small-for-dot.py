def min_dot_k(bits: int) -> int:  # NVIDIA's backend in triton 3.9: the inner size K of tl.dot
    return {8: 32, 16: 16, 32: 8, 64: 4}[bits]


for dtype, bits in (("float16", 16), ("float32", 32)):
    for block_n in (8, 16, 32):
        ok = block_n >= min_dot_k(bits)
        print(
            f"p ({dtype}) @ v with BLOCK_N = {block_n:2}: K = {block_n:2} -> {'compiles' if ok else 'rejected on a GPU'}"
        )
