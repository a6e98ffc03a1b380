"""Per-student variants' sentences: the conventions as statements state them, the diagnosis of
a convention kept from elsewhere, the variant CLI and problem-set texts (catalogue part;
`checker.messages.msg` looks them up). Placeholders: {args} / {returns} (the arguments and
outputs a convention applies to, in backticks), {arg} / {renamed} (a renamed argument),
{pairs} (renamings)."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    "variant.heading": ("Your conventions (this variant)", "你的约定（本变体）"),
    "variant.intro": (
        "This kata is handed out in a variant: the conventions below are yours, and where they "
        "differ from the rest of this statement or the shared conventions, they win. Your file "
        "is graded in them.",
        "本题以变体形式布置：下面这些约定是你的；它们与本题其余部分或通用约定不一致时，以它们为准。"
        "你的文件按这些约定评测。",
    ),
    "variant.example_heading": ("Examples", "示例"),
    "variant.example_note": (
        "The standard kata's worked example uses the standard conventions, not yours; it is left "
        "out. Your public sample tests (`test_public_*.py`) show calls in your conventions.",
        "标准题目的示例使用的是标准约定而不是你的约定，因此这里略去。你的公开样例测试"
        "（`test_public_*.py`）展示了按你的约定进行的调用。",
    ),
    "variant.layout.bhld": (
        "Layout of {args}: heads before positions, (B, H, L, d) (PyTorch's and Hugging Face's).",
        "{args} 的布局：头在位置之前，(B, H, L, d)（PyTorch 与 Hugging Face 的布局）。",
    ),
    "variant.layout.blhd": (
        "Layout of {args} (and of the output {returns}): positions before heads, (B, L, H, d) — "
        "flash-attn's layout. Where the statement writes (..., L, d), yours is (..., L, H, d): the "
        "sequence axis comes before the last leading axis; a 2-D (L, d) input has no such axis and "
        "stays (L, d). Masks keep their (..., L, S) layout.",
        "{args}（以及输出 {returns}）的布局：位置在头之前，(B, L, H, d)——flash-attn 的布局。题面写 "
        "(..., L, d) 的地方，你的是 (..., L, H, d)：序列轴在最后一个前置轴之前；二维的 (L, d) 输入没有"
        "这样的轴，保持 (L, d) 不变。mask 保持 (..., L, S) 布局。",
    ),
    "variant.sequence-first.batch-first": (
        "{args} are batch-first: (B, L, ...).",
        "{args} 是 batch 在前：(B, L, ...)。",
    ),
    "variant.sequence-first.sequence-first": (
        "{args} (and the output {returns}) are sequence-first: (L, B, ...) where the statement "
        "writes (B, L, ...), as nn.MultiheadAttention's default (batch_first=False) and fairseq's "
        "T x B x C. Masks keep their layout.",
        "{args}（以及输出 {returns}）是序列在前：题面写 (B, L, ...) 的地方是 (L, B, ...)，与 "
        "nn.MultiheadAttention 的默认值（batch_first=False）和 fairseq 的 T x B x C 一致。mask 保持原布局。",
    ),
    "variant.polarity.attend": (
        'Boolean masks ({args}) mean "may attend": True = this query may look at this key '
        "(PyTorch's F.scaled_dot_product_attention).",
        "布尔 mask（{args}）的含义是“可以关注”：True = 这个查询可以看这个键"
        "（PyTorch 的 F.scaled_dot_product_attention）。",
    ),
    "variant.polarity.masked": (
        'Boolean masks ({args}) mean "masked out": True = this key is hidden from this query '
        "(or is padding), False = it may be attended — the convention of fairseq and of "
        "nn.MultiheadAttention's key_padding_mask. A query whose keys are all True attends nothing "
        "and gets the zero result.",
        "布尔 mask（{args}）的含义是“被屏蔽”：True = 这个键对这个查询不可见（或者是 padding），"
        "False = 可以关注——这是 fairseq 和 nn.MultiheadAttention 的 key_padding_mask 的约定。"
        "一个查询的所有键都是 True 时，它什么也关注不到，结果为零。",
    ),
    "variant.names.standard": (
        "Argument names: as in the statement.",
        "参数名：与题面相同。",
    ),
    "variant.names.renamed": (
        "Argument names: {pairs} (the statement's name → yours; pass them by these names).",
        "参数名：{pairs}（题面的名字 → 你的名字；调用时按这些名字传参）。",
    ),
    "variant.layers.standard": ("Layer names: as in the statement.", "层名：与题面相同。"),
    "variant.layers.renamed": (
        "Layer names: {pairs} (the statement's name → yours; the grader loads the reference's "
        "weights into them).",
        "层名：{pairs}（题面的名字 → 你的名字；评测时参考实现的权重会加载到这些层中）。",
    ),
    "variant.scale.multiply": (
        "{args} multiplies the scores (None = 1/sqrt(d)).",
        "{args} 乘在分数上（None 表示 1/sqrt(d)）。",
    ),
    "variant.scale.temperature": (
        "Instead of {args}, the argument `{renamed}` divides the scores: "
        "softmax(q k^T / {renamed}), and None means sqrt(d) (the temperature of the original "
        "Transformer's popular PyTorch reimplementations).",
        "不用 {args}，而是参数 `{renamed}` 去除分数：softmax(q k^T / {renamed})，None 表示 sqrt(d)"
        "（原始 Transformer 流行的 PyTorch 复现中的 temperature）。",
    ),
    "variant.flag.standard": (
        "The flag {args} as in the statement.",
        "标志 {args} 与题面相同。",
    ),
    "variant.flag.inverted": (
        "Instead of {args}, the flag `{renamed}` means its opposite (`{renamed}` = not `{arg}`), "
        "so its default is the opposite too — vLLM's `is_neox_style`, for example.",
        "不用 {args}，而是标志 `{renamed}`，含义正好相反（`{renamed}` = not `{arg}`），"
        "所以它的默认值也相反——例如 vLLM 的 `is_neox_style`。",
    ),
    "variant.mask-shape.broadcast": (
        "{returns} returns a (B, 1, 1, S) mask, ready to broadcast against (B, H, L, S) scores.",
        "{returns} 返回 (B, 1, 1, S) 的 mask，可以直接与 (B, H, L, S) 的分数广播。",
    ),
    "variant.mask-shape.flat": (
        "{returns} returns a (B, S) mask — Hugging Face's attention_mask layout — not (B, 1, 1, S).",
        "{returns} 返回 (B, S) 的 mask——Hugging Face 的 attention_mask 布局——而不是 (B, 1, 1, S)。",
    ),
    "variant.mismatch_shape": (
        "{entry} returned shape {shape}, but in this variant's convention it returns {want}",
        "{entry} 返回的形状是 {shape}，但按本变体的约定应返回 {want}",
    ),
    # The diagnosis of a convention kept from elsewhere (checker/diagnose/conventions.py).
    "variant.follows": (
        "Your code follows another convention: {kept}. Your variant's is: {yours}.",
        "你的代码遵循的是另一种约定：{kept}。而你的变体的约定是：{yours}。",
    ),
    "variant.follows_evidence": (
        "Read in that convention, your code matches the reference on all {n} diagnosis probes.",
        "按那种约定来读，你的代码在全部 {n} 个诊断探针上都与参考实现一致。",
    ),
    "variant.names_evidence": (
        "Your signature has the parameter names of that convention.",
        "你的签名使用的是那种约定的参数名。",
    ),
    "variant.relative": (
        "Your code behaves as in another convention: {kept}. Your variant's is: {yours}.",
        "你的代码的行为符合另一种约定：{kept}。而你的变体的约定是：{yours}。",
    ),
    "variant.fix": (
        "Follow your variant's convention (the first section of your statement): {yours}.",
        "请遵循你的变体的约定（题面第一节）：{yours}。",
    ),
    "variant.graded": ("Variant", "变体"),
    "variant.frame_note": (
        "graded in this variant's conventions; test messages quote shapes in the standard kata's layout",
        "按本变体的约定评测；测试信息中的形状按标准题目的布局给出",
    ),
    "variant.readme": (
        "**This set is handed out in per-student variants.** Your folder is `<your-id>/` (your "
        "student id): your own statements (their first section states your conventions), the "
        "files to complete with your names and signatures, and sample tests in your conventions. "
        "Work in that folder and hand in its files; they are graded in your conventions.",
        "**本题集按学生分发不同变体。** 你的文件夹是 `<你的学号>/`：里面有你自己的题面（第一节写明你的约定）、"
        "带有你的参数名和签名的待完成文件，以及按你的约定编写的样例测试。请在这个文件夹里作答并提交其中的文件；"
        "评测按你的约定进行。",
    ),
    # kata start / check / solution for one candidate
    "variant.started": (
        "Variant {name} of {kata}: your conventions are in `kata show {kata}` (its first section).",
        "{kata} 的变体 {name}：你的约定见 `kata show {kata}`（第一节）。",
    ),
    "variant.unknown": (
        "{kata} was not started in a variant; use `kata start {kata} --variant random`",
        "{kata} 没有以变体方式开始；请用 `kata start {kata} --variant random`",
    ),
    "variant.none": (
        "{kata} declares no variant parameters: {why}",
        "{kata} 没有声明变体参数：{why}",
    ),
    "variant.kept_file": (
        "{path} is kept as it was (it was written for another variant?); pass --force to replace it, a backup is kept",
        "{path} 保持原样（它是为其他变体写的？）；加 --force 替换，会保留备份",
    ),
}
