P = 5  # tokens already in the cache
for step, L in (("prefill", 5), ("chunk", 3), ("token", 1), ("token", 1)):
    P0 = 0 if step == "prefill" else P
    right = list(range(P0, P0 + L))
    wrong = list(range(L))  # torch.arange(L): restarts at 0
    print(f"{step:8s} P={P0:2d}  positions {right}  restart gives {wrong}")
    P = P0 + L
