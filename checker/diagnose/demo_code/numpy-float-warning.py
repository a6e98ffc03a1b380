import warnings
import numpy as np

scores = np.array([[-np.inf, -np.inf]])  # a fully masked row
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    e = np.exp(scores - scores.max(-1, keepdims=True))
print("result:", e, " warning:", caught[0].message)
m = scores.max(-1, keepdims=True)
print("shift by 0 instead:", np.exp(scores - np.where(np.isfinite(m), m, 0)))
