n_sink, window = 2, 4
N = n_sink + window
tokens = list(range(9))  # the cache (C = 8) plus one new token: T = 9, e = 3
e = len(tokens) - N
print("T =", len(tokens), "N =", N, "e =", e)
print("tokens[-N:]                        :", tokens[-N:], "<- the sinks 0, 1 are gone")
print("tokens[:n_sink] + tokens[n_sink+e:]:", tokens[:n_sink] + tokens[n_sink + e :])
