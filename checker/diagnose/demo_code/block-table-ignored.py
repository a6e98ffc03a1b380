import torch

block_size = 2
v_cache = torch.arange(8.0).view(4, block_size)  # block i holds the values 2i, 2i + 1
block_table = torch.tensor([2, 0])  # this sequence's logical blocks 0, 1 are physical 2, 0
n = 3  # tokens 0, 1, 2
read = v_cache[block_table].flatten()[:n]
ignored = v_cache[torch.arange(2)].flatten()[:n]
print("through the table, tokens 0..2 :", read.tolist())
print("pool blocks 0, 1 in order      :", ignored.tolist(), " (another sequence's tokens)")
