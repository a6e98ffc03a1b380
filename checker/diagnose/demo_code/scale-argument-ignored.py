import math


def pick(scale, d=64):
    wrong = 1 / math.sqrt(d)  # always the default
    sloppy = scale or 1 / math.sqrt(d)  # replaces 0.0 too
    right = 1 / math.sqrt(d) if scale is None else scale
    return wrong, sloppy, right


for scale in (None, 0.3, 0.0):
    print(
        f"scale={scale!s:5}  ignored={pick(scale)[0]:.3f}  `or`={pick(scale)[1]:.3f}  right={pick(scale)[2]:.3f}"
    )
