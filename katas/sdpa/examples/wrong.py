# A typical first attempt: it looks right and passes a plain test, but fills masked
# scores with -1e9, so a query with no allowed key attends uniformly to every key.
import math

import torch


def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
    if scale is None:
        scale = 1 / math.sqrt(q.size(-1))
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, v)
