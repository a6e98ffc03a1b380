L = S = 256
block = 64
visited = skipped = 0
for qb in range(L // block):
    last_query = qb * block + block - 1  # L == S: query i may see keys 0..i
    for kb in range(S // block):
        visited += 1
        skipped += kb * block <= last_query
print(
    f"key blocks visited per head: all of them = {visited}, only those a query can see = {skipped}"
)
