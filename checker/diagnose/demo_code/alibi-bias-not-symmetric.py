import torch

m, p, S = 0.5, 2, 5  # is_causal=False: keys 3 and 4 lie after the query
j = torch.arange(S)
for name, bias in (("-m|p - j| ", -m * (p - j).abs()), ("m * j     ", m * j.float())):
    w = torch.softmax(bias, dim=-1)
    print(f"{name}: weights over keys 0..4 =", [round(float(x), 3) for x in w])
