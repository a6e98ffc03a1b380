import math

nope, rope = 128, 64  # DeepSeek-V2
print(f"1/sqrt(nope)        = {1 / math.sqrt(nope):.4f}")
print(
    f"1/sqrt(nope + rope) = {1 / math.sqrt(nope + rope):.4f}  <- q.k runs over all {nope + rope} dims"
)
