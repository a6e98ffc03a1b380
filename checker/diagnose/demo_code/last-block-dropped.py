L, block = 13, 4
print("L // block       =", L // block, "blocks cover tokens 0 ..", (L // block) * block - 1)
print("ceil(L / block)  =", -(-L // block), "blocks cover tokens 0 ..", L - 1)
