import math
import numpy as np

q = np.ones((2, 8), dtype=np.float32)
print("q / np.sqrt(8)  ->", (q / np.sqrt(8)).dtype)
print("q / math.sqrt(8)->", (q / math.sqrt(8)).dtype)
