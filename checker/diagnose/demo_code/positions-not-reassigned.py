n_sink, window, T = 2, 4, 8
N = n_sink + window
e = T - N
kept = list(range(n_sink)) + list(range(n_sink + e, T))  # token ids, in slot order
print("slot           :", list(range(N)))
print("token kept     :", kept)
print("key rotated at :", kept, "<- not re-rotated: each window key keeps its old position")
print("should be at   :", list(range(N)), "<- window keys rotated by -e =", -e)
