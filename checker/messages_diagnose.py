"""The diagnosis' sentences: its trace checks' evidence lines ("trace.") and the rest ("diag.") (catalogue part; `checker.messages.msg` looks
them up). {probe} is the probe's name in the reader's language."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    "trace.banned": ("probe '{probe}': {detail}", "探测输入“{probe}”：{detail}"),
    "trace.raised": (
        "probe '{probe}' raised {type}: {message}",
        "探测输入“{probe}”抛出 {type}：{message}",
    ),
    "trace.warned": ("probe '{probe}' warned: {message}", "探测输入“{probe}”发出警告：{message}"),
    "trace.return_type": (
        "probe '{probe}': returned {got}, expected {want}",
        "探测输入“{probe}”：返回了 {got}，应为 {want}",
    ),
    "trace.dtype": (
        "probe '{probe}': {want} inputs gave a {got} output",
        "探测输入“{probe}”：{want} 输入得到了 {got} 输出",
    ),
    "trace.numpy_warning": (
        "probe '{probe}': right values, but NumPy warned '{message}'",
        "探测输入“{probe}”：数值正确，但 NumPy 警告“{message}”",
    ),
    "trace.mutated": (
        "probe '{probe}': {which} changed during the call",
        "探测输入“{probe}”：调用过程中 {which} 被修改",
    ),
    "trace.largest": (
        "probe '{probe}': largest intermediate {shape} ({elements:,} elements) from {op}",
        "探测输入“{probe}”：最大的中间张量 {shape}（{elements:,} 个元素），来自 {op}",
    ),
    # the Triton katas (checker/diagnose/triton_rules.py)
    "trace.kernel_outside": (
        "probe '{probe}': the tl.{op} at line {line} {verb} {lanes} lane(s) {side} `{tensor}`{label}, "
        "first in program {program}",
        "探测输入“{probe}”：第 {line} 行的 tl.{op} {verb} {lanes} 个 lane，位置在 `{tensor}`{label} {side}，"
        "最早出现在 program {program}",
    ),
    "trace.kernel.read": ("read", "读取了"),
    "trace.kernel.wrote": ("wrote", "写入了"),
    "trace.kernel.after": ("past the end of", "的末尾之后"),
    "trace.kernel.before": ("before the start of", "的开头之前"),
    "trace.kernel.outside": ("far outside", "之外很远处"),
    "trace.kernel.unmasked": (" (the call has no mask)", "（这个调用没有 mask）"),
    "trace.kernel_no_launch": (
        "probe '{probe}': no Triton kernel was launched",
        "探测输入“{probe}”：没有启动任何 Triton kernel",
    ),
    "trace.kernel_torch_math": (
        "probe '{probe}': PyTorch ran {ops} in your wrapper",
        "探测输入“{probe}”：你的 wrapper 里 PyTorch 运行了 {ops}",
    ),
    "trace.kernel_causal_loads": (
        "probe '{probe}': your kernel loaded {causal:,} elements of k with is_causal=True and "
        "{full:,} without it ({blocks} query blocks per head)",
        "探测输入“{probe}”：is_causal=True 时你的 kernel 读取了 k 的 {causal:,} 个元素，"
        "不加因果时读取了 {full:,} 个（每个头 {blocks} 个查询分块）",
    ),
    "grid.lanes": (
        "The lanes of the tl.{op} at line {line} in program {program} (tile {shape}, one cell per "
        "{cell} lanes): expected = the lanes inside `{tensor}`, yours = the lanes your call accessed; "
        "red: outside the tensor",
        "第 {line} 行的 tl.{op} 在 program {program} 中的 lane（分块 {shape}，每格 {cell} 个 lane）："
        "应为 = 位于 `{tensor}` 之内的 lane，你的 = 你的调用访问的 lane；红色：位于张量之外",
    ),
    # the diagnosis' own sentences (checker/diagnose/engine.py)
    "diag.tests_raised": ("the tests raised: {detail}", "测试中抛出了异常：{detail}"),
    "diag.load_banned": ("called while loading your file: {names}", "加载文件时调用了：{names}"),
    "diag.together": (
        "together with {other}, it reproduces every probe exactly",
        "与 {other} 一起，它在每个探测输入上都被完全复现",
    ),
    "diag.peel_explains": (
        "explains the probe(s) {names}: with this mistake the known-wrong variant reproduces your output there",
        "解释了探测输入 {names}：加上这个错误后，已知错误写法在那里复现了你的输出",
    ),
    "diag.alike": (
        "the probes cannot tell it apart from: {names}",
        "探测输入无法把它与以下错误区分：{names}",
    ),
    "diag.unexplained_probes": (
        "something else is wrong as well: no catalogued mistake explains the probe(s) {names}",
        "另外还有别的问题：没有已知错误能解释探测输入 {names}",
    ),
    "diag.explains_tests": (
        "explains {n} of {total} failing tests",
        "解释了 {total} 个未通过测试中的 {n} 个",
    ),
    "diag.layout_read": ("with your `{layer}` read {layout}", "按 {layout} 读取你的 `{layer}` 时"),
    "diag.fused_no_layout": (
        "your fused `{layer}`: none of the row layouts tried ({names}) made a single-token call agree "
        "with the reference",
        "你的融合层 `{layer}`：尝试过的行布局（{names}）都不能让单个 token 的调用与参考答案一致",
    ),
    "diag.fused_layer_note": (
        "your fused `{layer}` matches none of the known row layouts ({names}), and no catalogued "
        "mistake explains the difference under any of them.",
        "你的融合层 `{layer}` 不符合任何已知的行布局（{names}），并且在任何一种布局下都没有已知错误能解释这些差异。",
    ),
    "diag.weights_said": ("loading the weights said: {message}", "载入权重时的提示：{message}"),
    "diag.reproduced": (
        "reproduced on the probe(s) {names}: your output equals the known-wrong variant and differs from "
        "the reference",
        "在探测输入 {names} 上复现：你的输出与已知错误写法一致，与参考答案不同",
    ),
    "diag.family_partial": (
        "on the probe(s) {names} your output goes wrong where every known spelling of this mistake "
        "does; it also differs from the reference elsewhere",
        "在探测输入 {names} 上，你的输出在该错误所有已知写法都会出错的地方出错；在其他地方也与参考答案不同",
    ),
    "diag.family_exact": (
        "on the probe(s) {names} your output goes wrong exactly where every known spelling of this "
        "mistake does, and nowhere else",
        "在探测输入 {names} 上，你的输出恰好在该错误所有已知写法都会出错的地方出错，其他地方都正确",
    ),
    "diag.ran_ops": (" (ran {ops})", "（执行了 {ops}）"),
    "diag.static_banned": (
        "your file refers to {names} (never reached by the tests)",
        "你的文件引用了 {names}（测试中没有执行到）",
    ),
    "diag.cannot_tell": ("the probes cannot tell apart: {names}", "探测输入无法区分：{names}"),
    "diag.closest": (
        "The closest catalogued mistake, '{title}' ({mid}), reproduces only {share:.0%} of the differences: "
        "it may be part of the problem, together with something else.",
        "最接近的已知错误是“{title}”（{mid}），但它只能复现 {share:.0%} 的差异：它可能是问题的一部分，还另有别的问题。",
    ),
    "diag.failing": ("failing: {test}", "未通过：{test}"),
    "diag.probes_differ": (
        "the diagnosis probes that differ: {names}",
        "输出不同的诊断探测输入：{names}",
    ),
    "diag.quoted": ("'{name}'", "“{name}”"),
    "diag.list_sep": (", ", "、"),
    "diag.input_sep": ("; ", "、"),
    "mistakes.link": (
        "kata show {kata}: {section} · kata explain {id}",
        "kata show {kata}：{section} · kata explain {id}",
    ),
    "diag.probe_sizes": (
        " (These numbers are the diagnosis' own smaller input, '{probe}': {sizes}; the failing tests "
        "use their own sizes.)",
        "（以上数字来自诊断用的较小输入“{probe}”：{sizes}；未通过的测试用的是它们自己的尺寸。）",
    ),
    "diag.paren": (" ({text})", "（{text}）"),
    "diag.failed": (
        "the diagnosis itself failed ({type}: {detail}); please report it",
        "诊断本身出错了（{type}：{detail}），请报告这个问题",
    ),
    "trace.nondeterministic": (
        "probe '{probe}': two identical calls gave different outputs{note}",
        "探测输入“{probe}”：两次相同的调用得到了不同的输出{note}",
    ),
}
