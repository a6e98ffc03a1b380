d = 8
print("interleaved pairs :", [(2 * i, 2 * i + 1) for i in range(d // 2)])
print("rotate_half pairs :", [(i, i + d // 2) for i in range(d // 2)])
