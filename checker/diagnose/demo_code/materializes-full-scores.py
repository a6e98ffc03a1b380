L = S = 4096
tile = 128
print(f"full score matrix : {L * S:>12,} elements")
print(f"one 128 x 128 tile: {tile * tile:>12,} elements ({L * S // (tile * tile)} times fewer)")
