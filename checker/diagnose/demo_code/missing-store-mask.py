import os

os.environ["TRITON_INTERPRET"] = "1"  # the kernel runs on the CPU, in Triton's interpreter
import torch, triton, triton.language as tl


@triton.jit
def double(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    cols = tl.arange(0, BLOCK)  # 8 lanes for a row of 5
    ok = cols < n_cols
    x = tl.load(x_ptr + cols, mask=ok, other=0.0)
    if MASKED:
        tl.store(y_ptr + cols, 2 * x, mask=ok)
    else:
        tl.store(y_ptr + cols, 2 * x)  # lanes 5..7 write past the end of y


buf = torch.full((8,), -1.0)  # y is buf[:5]; buf[5:] stands for whatever lies after it
for masked in (False, True):
    buf.fill_(-1.0)
    double[(1,)](torch.arange(5.0), buf[:5], 5, BLOCK=8, MASKED=masked)
    print(
        f"mask={'yes' if masked else 'no ':3}: y = {buf[:5].tolist()}, after y: {buf[5:].tolist()}"
    )
