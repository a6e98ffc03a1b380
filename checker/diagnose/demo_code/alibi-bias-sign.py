import torch

m, p = 0.5, 4  # slope of the head, position of the query
j = torch.arange(5)
for name, bias in (("-m|p - j|", -m * (p - j).abs()), ("+m|p - j|", m * (p - j).abs())):
    w = torch.softmax(bias, dim=-1)
    print(f"{name}: weights over keys 0..4 =", [round(float(x), 3) for x in w])
