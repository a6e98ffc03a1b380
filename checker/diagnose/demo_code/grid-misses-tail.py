import torch

n, block = 10, 4  # 10 rows, 4 rows per program
for name, programs in (("n // block", n // block), ("cdiv(n, block)", -(-n // block))):
    written = torch.zeros(n, dtype=torch.bool)
    for pid in range(programs):
        rows = torch.arange(pid * block, pid * block + block)
        written[rows[rows < n]] = True
    print(
        f"grid = ({name}) = {programs} programs: rows never written = {(~written).nonzero().flatten().tolist()}"
    )
