H, P, r, nope, v, rope = 128, 32_768, 512, 128, 128, 64  # DeepSeek-V2 sizes, one layer
naive = P * H * (nope + v)  # kv_b_proj on every cached latent
absorbed = P * (r + rope) + H * (nope + r)  # the cache itself + the absorbed query
print(f"naive decoding step builds  {naive:>13,} numbers")
print(f"absorbed step reads         {absorbed:>13,} numbers ({naive / absorbed:.0f}x less)")
