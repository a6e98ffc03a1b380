L = S = 8192
W = 128
print(f"full scores : {L * S:>12,} elements")
print(f"banded      : {L * W:>12,} elements ({L * S // (L * W)} times fewer)")
