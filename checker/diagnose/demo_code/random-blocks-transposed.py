import torch

nb = 4
random_blocks = torch.tensor([[3], [3], [0], [1]])  # block 0 also attends block 3, ...
right = torch.zeros(nb, nb, dtype=torch.bool).scatter(1, random_blocks, True)
print("rows (query blocks) -> random key blocks:")
print(right.int())
print("transposed (what layout[random_blocks[i], i] gives):")
print(right.T.int())
