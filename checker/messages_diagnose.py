"""The diagnosis' trace checks' evidence lines (catalogue part; `checker.messages.msg` looks
them up). {probe} is the probe's name in the reader's language."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    "trace.banned": ("probe '{probe}': {detail}", "探测输入“{probe}”：{detail}"),
    "trace.raised": ("probe '{probe}' raised {type}: {message}", "探测输入“{probe}”抛出 {type}：{message}"),
    "trace.warned": ("probe '{probe}' warned: {message}", "探测输入“{probe}”发出警告：{message}"),
    "trace.return_type": ("probe '{probe}': returned {got}, expected {want}",
                          "探测输入“{probe}”：返回了 {got}，应为 {want}"),
    "trace.dtype": ("probe '{probe}': {want} inputs gave a {got} output", "探测输入“{probe}”：{want} 输入得到了 {got} 输出"),
    "trace.numpy_warning": ("probe '{probe}': right values, but NumPy warned '{message}'",
                            "探测输入“{probe}”：数值正确，但 NumPy 警告“{message}”"),
    "trace.mutated": ("probe '{probe}': {which} changed during the call", "探测输入“{probe}”：调用过程中 {which} 被修改"),
    "trace.largest": ("probe '{probe}': largest intermediate {shape} ({elements:,} elements) from {op}",
                      "探测输入“{probe}”：最大的中间张量 {shape}（{elements:,} 个元素），来自 {op}"),
}
