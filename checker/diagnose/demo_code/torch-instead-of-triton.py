import torch

x = torch.randn(4, 6)
ops = []


class Record(torch.utils._python_dispatch.TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ops.append(func._schema.name)
        return func(*args, **(kwargs or {}))


def softmax_wrapper(x):  # the "kernel" is only a copy: PyTorch did the math
    y = torch.softmax(x, dim=-1)
    return y.clone()


with Record():
    softmax_wrapper(x)
print("ops the wrapper ran:", sorted(set(ops)))
