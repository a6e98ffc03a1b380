import os

os.environ["TRITON_INTERPRET"] = "1"  # the kernel runs on the CPU, in Triton's interpreter
import torch, triton, triton.language as tl


@triton.jit
def row_max(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    cols = tl.arange(0, BLOCK)  # 8 lanes for a row of 5: lanes 5, 6, 7 are past its end
    ptrs = x_ptr + tl.program_id(0) * n_cols + cols
    if MASKED:
        x = tl.load(ptrs, mask=cols < n_cols, other=-float("inf"))
    else:
        x = tl.load(ptrs)  # no mask: lanes 5..7 read whatever follows row 0 (here, row 1)
    tl.store(out_ptr + tl.program_id(0), tl.max(x, 0))


x = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0], [9.0, 0.0, 0.0, 0.0, 0.0]])
for masked in (False, True):
    out = torch.empty(1)
    row_max[(1,)](x, out, 5, BLOCK=8, MASKED=masked)
    print(f"mask={'yes' if masked else 'no ':3}: max of row 0 = {out.item()}  (row 0 is 1..5)")
