import torch

torch.manual_seed(0)
H, d = 2, 2
heads = torch.tensor([[1.0, 1.0, 0.0, 0.0]])  # only head 0 produced something
w_o = torch.nn.Linear(H * d, H * d, bias=False)
print("without W_o:", heads.tolist(), " (head 1's slice stays 0)")
print(
    "with W_o:   ",
    [round(x, 3) for x in w_o(heads).detach()[0].tolist()],
    " (every output mixes both heads)",
)
