import torch

B, L, D, n_latents = 2, 100, 32, 8
x, latents = torch.zeros(B, L, D), torch.zeros(n_latents, D)
print("queries from x       ->", tuple(x.shape), "output rows per batch:", x.shape[1])
print(
    "queries from latents ->",
    tuple(latents.expand(B, -1, -1).shape),
    "output rows per batch:",
    n_latents,
)
