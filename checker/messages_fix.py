"""`kata fix`, the hint ladder and the folded test list (catalogue part: "fix.", "ladder.",
"fold.", "joint."; `checker.messages.msg` looks them up).

`ladder.property.<mistake id>` is the ladder's first rung: the property the code breaks, in
words and without code (the mistake catalogue's fix text holds the code)."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    "fix.variant": (
        "kata fix repairs code written in the standard kata's conventions, and this file was started in a variant of {kata}",
        "kata fix 修复的是按标准题约定写的代码，而这个文件是按 {kata} 的某个变体开始的",
    ),
    "fix.variant_hint": (
        "`kata hint` still climbs the ladder for your diagnosed mistake",
        "`kata hint` 仍然会针对诊断出的错误逐级给出提示",
    ),
    # -- kata fix -------------------------------------------------------------------------------
    "fix.header": ("Fix {n} of {total}: {id}", "修复 {n}/{total}：{id}"),
    "fix.fixes_tests": (
        "fixes {n} of {m} failing tests (re-graded in the sandbox: no test that passed before fails)",
        "修好了 {m} 个失败测试中的 {n} 个（已在沙箱中重新评测：原来通过的测试没有一个变成失败）",
    ),
    "fix.in_order": (
        "Each fix applies on top of the one before it.",
        "每个修复都建立在前一个修复之上，按顺序应用。",
    ),
    "fix.unfixed": (
        "No verified fix for {id} ({title}). `kata explain {id}` says how it is usually fixed.",
        "{id}（{title}）没有经过验证的修复。`kata explain {id}` 说明了通常的改法。",
    ),
    "fix.searched": (
        "{n} candidate repairs were graded in the sandbox; only verified ones are shown.",
        "在沙箱中评测了 {n} 个候选修复；只显示通过验证的。",
    ),
    "fix.after": (
        "With every fix applied your file {status}.",
        "应用全部修复后，你的文件{status}。",
    ),
    "fix.after_pass": ("passes every required test", "通过了所有必需测试"),
    "fix.after_fail": (
        "still fails {n} test(s): a mistake without a fix is left",
        "仍有 {n} 个测试失败：还有没能修复的错误",
    ),
    "fix.write_hint": (
        "Apply it with `kata fix {kata}{file} --write` (your current version is kept; `kata fix {kata}{file} --undo` restores it).",
        "用 `kata fix {kata}{file} --write` 应用（会保留你当前的版本；`kata fix {kata}{file} --undo` 可以恢复）。",
    ),
    "fix.written": (
        "Wrote the fixed version to {file}; your previous version is kept as {backup}.",
        "已把修复后的版本写入 {file}；你之前的版本保存在 {backup}。",
    ),
    "fix.undo_hint": (
        "`kata fix {kata}{file} --undo` restores it.",
        "`kata fix {kata}{file} --undo` 可以恢复。",
    ),
    "fix.passes": (
        "{file} passes every required test: nothing to fix.",
        "{file} 通过了所有必需测试：没有需要修复的。",
    ),
    "fix.not_graded": (
        "{file} could not be graded ({why}), so no fix can be verified. `kata check {kata}` shows the details.",
        "{file} 无法评测（{why}），所以无法验证任何修复。`kata check {kata}` 会显示详情。",
    ),
    "fix.timed_out": (
        "Your code ran out of time ({why}); a fix can only be verified on code that finishes. `kata check {kata}` shows where.",
        "你的代码超时了（{why}）；只有能运行完的代码才能验证修复。`kata check {kata}` 会显示位置。",
    ),
    "fix.only_unknown": (
        "No catalogued mistake was diagnosed (only `no-known-mistake`), so no repair template applies. `kata hint {kata}` climbs the kata's own hints.",
        "没有诊断出目录中的错误（只有 `no-known-mistake`），所以没有可用的修复模板。`kata hint {kata}` 会逐级给出这道题自己的提示。",
    ),
    "fix.nothing_catalogued": (
        "Nothing diagnosed that a repair template knows ({ids}). `kata check {kata}` shows the details.",
        "诊断结果中没有修复模板能处理的错误（{ids}）。`kata check {kata}` 会显示详情。",
    ),
    "fix.changed": (
        "{file} changed while the fix was searched: nothing was written. Run `kata fix` again.",
        "搜索修复期间 {file} 被改动了：没有写入任何内容。请重新运行 `kata fix`。",
    ),
    "fix.undone": (
        "Restored {file} from {backup}; the version it replaced is kept as {kept}.",
        "已从 {backup} 恢复 {file}；被替换的版本保存在 {kept}。",
    ),
    "fix.nothing_to_undo": (
        "There is no `kata fix --write` of {file} to undo.",
        "{file} 没有可以撤销的 `kata fix --write`。",
    ),
    "fix.backup_missing": (
        "The kept version {backup} is gone: nothing was restored.",
        "保存的版本 {backup} 已不存在：没有恢复任何内容。",
    ),
    "fix.write_undo": (
        "--write and --undo cannot be used together",
        "--write 和 --undo 不能同时使用",
    ),
    "fix.in_mock": (
        "{kata} is part of the running mock interview {id}: no fixes until it ends",
        "{kata} 属于正在进行的模拟面试 {id}：面试结束前不提供修复",
    ),
    "fix.in_mock_hint": (
        "`kata mock hint {kata}` gives the hints the interview allows (they cost points)",
        "`kata mock hint {kata}` 给出面试允许的提示（会扣分）",
    ),
    "fix.needs_libcst": (
        "`kata fix` needs libcst, which is not installed",
        "`kata fix` 需要 libcst，但它没有安装",
    ),
    "fix.needs_libcst_hint": (
        "pip install libcst (it is one of attnkata's dependencies: reinstall attnkata)",
        "pip install libcst（它是 attnkata 的依赖之一：重新安装 attnkata 即可）",
    ),
    "fix.notebook_heading": ("Verified fix", "经过验证的修复"),
    "fix.report_intro": (
        "Your instructor chose to include verified fixes: each edit of your own file below was graded again in the sandbox before it was shown.",
        "你的老师选择附上经过验证的修复：下面对你自己文件的每处修改，在显示之前都已在沙箱中重新评测过。",
    ),
    "ladder.scorecard": (
        "hint ladder: {n} rung(s) taken (a mock interview allows the first rung only)",
        "提示阶梯：用了 {n} 级（模拟面试只允许第一级）",
    ),
    # -- the folded test list (kata check, the notebook) ----------------------------------------
    "fold.explains": (
        "explains {n} failing test(s): {tests}",
        "解释了 {n} 个失败的测试：{tests}",
    ),
    "fold.more": ("… and {n} more", "……另有 {n} 个"),
    "fold.other": ("Failing tests no diagnosis explains", "没有被诊断解释的失败测试"),
    "fold.tests_hint": (
        "{n} failing test(s) in all; `--tests` lists every test.",
        "共 {n} 个测试失败；`--tests` 会列出每个测试。",
    ),
    "fold.tests": ("Tests", "测试"),
    "fold.every_test": ("every test ({n})", "全部测试（{n}）"),
    # -- one mistake's text beside another of its family (checker/runner.py `joint_texts`):
    # the texts written for a mistake alone say the other part was done right.
    "joint.online-softmax-no-rescale": (
        "When a later key tile raises a row's running max from m_old to m_new, everything accumulated so far was weighted by exp(score - m_old) and must be multiplied by exp(m_old - m_new). Your code adds the new tile's exp(s - m_new) @ v to an accumulator it never rescales, so the earlier tiles are over-weighted by exp(m_new - m_old). Your running sum is not rescaled either (the other finding): both need the same factor.",
        "当后面的键分块把某一行的运行最大值从 m_old 抬到 m_new 时，之前累加的一切都是按 exp(score - m_old) 加权的，必须乘上 exp(m_old - m_new)。你的代码把新分块的 exp(s - m_new) @ v 加到一个从不缩放的累加量上，于是前面的分块被多算了 exp(m_new - m_old) 倍。你的运行和也没有缩放（见另一条诊断）：两者需要同一个系数。",
    ),
    "joint.online-softmax-sum-not-rescaled": (
        "The running sum l is the softmax's denominator: like the accumulator it must be moved to the new max with exp(m_old - m_new) whenever a key tile raises the row max. Your code keeps adding exp(s - m_new) to an l still measured against older maxima, and it does not rescale the accumulator either (the other finding): neither part of the running state follows the max.",
        "运行和 l 是 softmax 的分母：每当某个键分块抬高了行最大值，它也必须像累加量一样乘上 exp(m_old - m_new) 换算到新的最大值下。你的代码继续把 exp(s - m_new) 加到一个仍以旧最大值为基准的 l 上，而且也没有缩放累加量（见另一条诊断）：运行状态的两部分都没有跟上最大值。",
    ),
    "joint.flash-bwd-missing-delta": (
        "The softmax's Jacobian gives dS = P * (dP - D) with D_i = sum_j P_ij dP_ij, which FlashAttention computes as rowsum(dout * out) without any L x S matrix. Your code uses dS = P * dP, so dq and dk are wrong.",
        "softmax 的雅可比给出 dS = P * (dP - D)，其中 D_i = sum_j P_ij dP_ij，FlashAttention 用 rowsum(dout * out) 计算它，不需要任何 L x S 的矩阵。你的代码用的是 dS = P * dP，所以 dq 和 dk 都错了。",
    ),
    "joint.cache-stores-repeated-heads": (
        "Your returned cache has one entry per query head instead of per KV head: the keys and values were expanded to the query heads before they were cached. The cache is H / Hkv times larger than it has to be, which is exactly the memory GQA exists to save, and a cache in the contract's layout (Hkv heads) no longer fits your code.",
        "你返回的缓存按查询头存放，而不是按 KV 头：键和值在放进缓存之前就被扩展成了查询头的个数。缓存大了 H / Hkv 倍，而省下这部分内存正是 GQA 存在的意义；而且按约定布局（Hkv 个头）给出的缓存也放不进你的代码了。",
    ),
    "joint.rope-on-values": (
        "RoPE rotates queries and keys only, so that q.k depends on their relative position. Your code rotates the values too: every value (and so the output and the value cache) is turned by its own position.",
        "RoPE 只旋转查询和键，目的是让 q·k 依赖它们的相对位置。你的代码把 value 也旋转了：每个 value（因此输出和 value 缓存）都按自己的位置转了一下。",
    ),
    "joint.topk-softmax-not-renormalized": (
        "Your code takes the softmax over every allowed key and then zeroes the weights of the keys outside the top-k. The weights that remain sum to less than 1, so every output is shrunk towards zero. The softmax must run over the kept scores only.",
        "你的代码先对所有允许的键做 softmax，再把 top-k 之外的键的权重置零。剩下的权重之和小于 1，所有输出都被往零的方向缩小了。softmax 应该只在保留下来的分数上做。",
    ),
    # -- the hint ladder -----------------------------------------------------------------------
    "ladder.title": ("Hint {n}/3 for {id}", "{id} 的提示 {n}/3"),
    "ladder.rung.1": ("what your code breaks", "你的代码违反了什么"),
    "ladder.rung.2": ("where", "在哪里"),
    "ladder.rung.3": ("the fix, verified on your code", "在你的代码上验证过的修复"),
    "ladder.where_line": ("Line {line}: `{text}`.", "第 {line} 行：`{text}`。"),
    "ladder.where_nowhere": (
        "The diagnosis could not point at one line for it; look where your code does what rung 1 describes.",
        "诊断无法把它定位到某一行；请在代码里找第 1 级提示所描述的那一步。",
    ),
    "ladder.heads": (
        "On the diagnosis' small input ({n} query heads), query head {h} reads KV head {got}; it should read KV head {want}.",
        "在诊断用的小输入上（{n} 个查询头），查询头 {h} 读的是 KV 头 {got}；它应该读 KV 头 {want}。",
    ),
    "ladder.mask_extra": (
        "On a small input, query {i} attends key {j}; it should not.",
        "在一个小输入上，查询 {i} 关注了键 {j}；它不应该关注。",
    ),
    "ladder.mask_missing": (
        "On a small input, query {i} does not attend key {j}; it should.",
        "在一个小输入上，查询 {i} 没有关注键 {j}；它应该关注。",
    ),
    "ladder.evidence": ("What showed it: {evidence}", "依据：{evidence}"),
    "ladder.fix_none": (
        "No verified fix for your code ({n} candidate repairs graded). In general: {fix}",
        "没有在你的代码上验证过的修复（评测了 {n} 个候选修复）。一般的改法：{fix}",
    ),
    "ladder.fix_gone": (
        "Your file no longer has this mistake: nothing to fix. Run `kata check {kata}`.",
        "你的文件已经没有这个错误了：不需要修复。请运行 `kata check {kata}`。",
    ),
    "ladder.fix_not_graded": (
        "Your file cannot be graded right now ({why}), so no fix can be verified.",
        "你的文件现在无法评测（{why}），所以无法验证修复。",
    ),
    "ladder.last": (
        "That was the last rung; `kata solution {kata}` shows the reference.",
        "这是最后一级提示；`kata solution {kata}` 会显示参考解答。",
    ),
    "ladder.rungs_left": (
        "Run `kata hint {kata}` again for rung {n}.",
        "再次运行 `kata hint {kata}` 查看第 {n} 级。",
    ),
    "ladder.level_range": ("--level must be between 1 and {n}", "--level 必须在 1 到 {n} 之间"),
    "ladder.no_source": (
        "The checked version of your code is not available any more; run `kata check {kata}` again.",
        "检查过的代码版本已不可用；请重新运行 `kata check {kata}`。",
    ),
    # -- rung 1: the property each mistake breaks, in words ------------------------------------
    "ladder.property.scale-by-d-model": (
        "Each head's dot product adds up only that head's few dimensions, so the factor that keeps the logits at unit scale comes from the head's width, not the whole model's.",
        "每个头的点积只累加该头自己的那几维，所以让 logits 保持单位尺度的系数应来自单个头的宽度，而不是整个模型的宽度。",
    ),
    "ladder.property.missing-scale": (
        "The dot product of two d-dimensional vectors grows like the square root of d; the logits must be brought back to unit scale before the softmax.",
        "两个 d 维向量的点积大致随 d 的平方根增长；在 softmax 之前必须把 logits 缩回单位尺度。",
    ),
    "ladder.property.scale-not-sqrt": (
        "The spread of the dot products grows with the square root of the head dim, not with the dim itself: your correction is too strong.",
        "点积的离散程度随 head dim 的平方根增长，而不是随维度本身增长：你的修正过头了。",
    ),
    "ladder.property.scale-inverted": (
        "The scale must shrink large dot products, not enlarge them: your factor goes the wrong way.",
        "缩放应该把大的点积缩小，而不是放大：你的系数方向反了。",
    ),
    "ladder.property.scale-argument-ignored": (
        "A scale the caller passes replaces the default; only when none is given does the default apply.",
        "调用方传入的缩放系数会替换默认值；只有没有传入时才使用默认值。",
    ),
    "ladder.property.softmax-wrong-dim": (
        "For each query, the weights over its keys must sum to 1: the normalisation runs along the keys.",
        "对每个查询，它在所有键上的权重之和必须为 1：归一化要沿着键的方向进行。",
    ),
    "ladder.property.unstable-softmax": (
        "The exponential overflows on large logits; the softmax does not change when each row is shifted by its own largest value.",
        "logits 很大时指数会溢出；而每一行减去它自己的最大值并不会改变 softmax 的结果。",
    ),
    "ladder.property.causal-mask-inverted": (
        "A query may look at itself and at earlier keys, never at later ones: your mask keeps the wrong side.",
        "查询可以看自己和之前的键，永远不能看之后的键：你的 mask 保留了错误的一侧。",
    ),
    "ladder.property.causal-mask-excludes-diagonal": (
        "A query may attend the key at its own position: the diagonal belongs to the allowed part.",
        "查询可以关注与它位置相同的键：对角线属于允许的部分。",
    ),
    "ladder.property.causal-mask-leaks-future": (
        "A query may attend keys up to its own position and no further; your mask lets it see one more.",
        "查询只能关注到它自己位置为止的键；你的 mask 让它多看到了一个。",
    ),
    "ladder.property.causal-mask-top-left": (
        "With more keys than queries (a KV cache), the queries are the last positions: the causal mask is anchored at the bottom-right corner.",
        "键比查询多时（KV cache），查询是最后的那些位置：因果 mask 要对齐右下角。",
    ),
    "ladder.property.mask-polarity-flipped": (
        "In the mask, True means this query may attend this key; your code blocks the keys it should keep.",
        "在 mask 中 True 表示该查询可以关注该键；你的代码屏蔽了本应保留的键。",
    ),
    "ladder.property.mask-ignored": (
        "The caller's mask must take the blocked keys out of every row before the softmax; your code never uses it.",
        "调用方传入的 mask 必须在 softmax 之前把被屏蔽的键从每一行中去掉；你的代码根本没有用它。",
    ),
    "ladder.property.mask-added-as-float": (
        "A boolean mask says which keys are allowed; adding it as a number shifts the allowed scores by one instead of removing the others.",
        "布尔 mask 表示哪些键被允许；把它当数值加上去只会让允许的分数加 1，而不是去掉其他的键。",
    ),
    "ladder.property.fully-masked-row-nan": (
        "A query with no key it may attend must get zeros; in your code its row of scores is all minus infinity and the softmax divides zero by zero.",
        "没有任何可关注键的查询必须得到零；在你的代码中，它那一行分数全是负无穷，softmax 做了零除以零。",
    ),
    "ladder.property.fully-masked-row-uniform": (
        "A query with no key it may attend must get zeros; a large finite fill value makes its row uniform, so it returns the mean of the values.",
        "没有任何可关注键的查询必须得到零；用一个很大的有限值填充会让这一行变成均匀分布，于是返回了 values 的平均值。",
    ),
    "ladder.property.fully-masked-row-nan-gradient": (
        "A fully masked row must give zeros and finite gradients; patching the NaN after the softmax still lets it flow back through the addition.",
        "全遮掩的行必须得到零，并且梯度是有限的；在 softmax 之后修补 NaN，NaN 仍会通过加法传回梯度。",
    ),
    "ladder.property.mask-applied-after-softmax": (
        "Blocked keys must be out before the weights are normalised; zeroing them afterwards leaves rows that no longer sum to 1.",
        "被屏蔽的键必须在权重归一化之前去掉；事后把它们置零，会让每行的和不再是 1。",
    ),
    "ladder.property.padding-mask-wrong-axis": (
        "A key padding mask hides keys, so it runs along the last axis of the scores and broadcasts over the heads and the queries.",
        "键的 padding mask 屏蔽的是键，所以它要沿着分数的最后一个轴，并在头和查询上广播。",
    ),
    "ladder.property.transpose-2d-on-batched": (
        "Only the last two axes of the keys swap; a transpose of every axis scrambles the batch and head axes.",
        "只应交换键的最后两个轴；把所有轴都转置会打乱 batch 和头的轴。",
    ),
    "ladder.property.split-heads-without-transpose": (
        "Each token's features are cut into heads; reading them straight into a heads-first shape mixes tokens and heads.",
        "每个 token 的特征被切分到各个头；直接按“头在前”的形状读取会把 token 和头混在一起。",
    ),
    "ladder.property.merge-heads-without-transpose": (
        "Before the heads are joined again, each token must gather its own heads; reshaping heads-first data mixes tokens.",
        "在把各头重新拼起来之前，每个 token 要先收集自己的那些头；直接重塑“头在前”的数据会把 token 混在一起。",
    ),
    "ladder.property.missing-contiguous": (
        "After a transpose the memory is no longer laid out in the new order, and a view cannot reinterpret it.",
        "转置之后内存不再按新的顺序排列，view 无法重新解释它。",
    ),
    "ladder.property.missing-output-projection": (
        "Multi-head attention ends with the output projection that mixes the heads; your forward leaves it out.",
        "多头注意力最后要经过混合各个头的输出投影；你的 forward 漏掉了它。",
    ),
    "ladder.property.dropout-in-eval": (
        "In evaluation the module must be deterministic: dropout only acts while training.",
        "评估模式下模块必须是确定性的：dropout 只在训练时起作用。",
    ),
    "ladder.property.kv-repeat-instead-of-interleave": (
        "Each group of adjacent query heads shares one KV head: query head h reads KV head h divided by the group size, not h modulo the number of KV heads.",
        "每组相邻的查询头共用一个 KV 头：查询头 h 读的是 h 除以组大小得到的 KV 头，而不是 h 对 KV 头数取模。",
    ),
    "ladder.property.kv-projection-wrong-size": (
        "The keys and values have fewer heads than the queries; their projections produce only those heads.",
        "键和值的头比查询少；它们的投影只产生这么多头。",
    ),
    "ladder.property.kv-heads-not-expanded": (
        "Every query head needs a KV head to score against: the few KV heads must be shared out to the query heads.",
        "每个查询头都需要一个 KV 头来打分：少数几个 KV 头必须分配给所有查询头。",
    ),
    "ladder.property.window-off-by-one": (
        "The window's edge is inclusive as the statement defines it; your band is one key too wide or too narrow.",
        "按题目的定义，窗口的边界是包含在内的；你的带宽多了或少了一个键。",
    ),
    "ladder.property.window-wrong-side": (
        "The two sides of the band have their own widths; your code swaps which side gets which.",
        "带的两侧各有自己的宽度；你的代码把两侧弄反了。",
    ),
    "ladder.property.window-materializes-full-scores": (
        "A sliding window only needs each query's nearby keys; building every score of every pair costs memory the window is meant to save.",
        "滑动窗口只需要每个查询附近的键；计算所有配对的分数会耗费窗口本来要节省的内存。",
    ),
    "ladder.property.materializes-full-scores": (
        "The efficient version never holds all scores at once: it works through the keys block by block.",
        "高效版本从不同时保存全部分数：它逐块处理键。",
    ),
    "ladder.property.online-softmax-no-rescale": (
        "When the running maximum grows, everything accumulated under the old maximum must be scaled down to the new one, the output included.",
        "当运行中的最大值变大时，在旧最大值下累积的所有量都要按新最大值缩小，输出也包括在内。",
    ),
    "ladder.property.online-softmax-sum-not-rescaled": (
        "When the running maximum grows, the running sum of exponentials must be scaled to the new maximum too.",
        "当运行中的最大值变大时，指数的累计和也必须按新的最大值缩放。",
    ),
    "ladder.property.flash-max-init-zero": (
        "The running maximum starts below every score; starting it at zero loses rows whose scores are all very negative.",
        "运行中的最大值要从低于所有分数的值开始；从零开始会丢掉分数全都很负的行。",
    ),
    "ladder.property.flash-empty-block-nan": (
        "A tile in which a row has no allowed key contributes nothing to that row; it must not turn the row into NaN.",
        "对某一行来说没有可关注键的块不应贡献任何东西；它不能让这一行变成 NaN。",
    ),
    "ladder.property.flash-tail-block-dropped": (
        "The last tile may be shorter than the others; it still holds keys (and queries) that count.",
        "最后一块可能比其他块短；它里面的键（和查询）仍然要算进去。",
    ),
    "ladder.property.lse-wrong": (
        "The returned log-sum-exp is the log of each row's total weight, at the same scale as the scores.",
        "返回的 log-sum-exp 是每一行总权重的对数，和分数处在同一尺度上。",
    ),
    "ladder.property.flash-bwd-missing-delta": (
        "The softmax's gradient subtracts, in each row, the weighted average of the incoming gradient; that term is missing.",
        "softmax 的梯度在每一行要减去输入梯度的加权平均；你漏掉了这一项。",
    ),
    "ladder.property.flash-bwd-missing-scale": (
        "The scores were scaled before the softmax, so the gradients of the queries and keys carry the same scale.",
        "分数在 softmax 之前被缩放过，所以查询和键的梯度也要带上同样的缩放。",
    ),
    "ladder.property.flash-bwd-renormalizes-per-tile": (
        "The weights of a tile are its share of the whole row's total, which the saved log-sum-exp gives, not a softmax of the tile alone.",
        "一块中的权重是它在整行总和中的份额，由保存的 log-sum-exp 给出，而不是单独对这一块做 softmax。",
    ),
    "ladder.property.flash-bwd-nan-empty-rows": (
        "A row with no allowed key has zero weight everywhere; its gradients must stay zero, not NaN.",
        "没有可关注键的行处处权重为零；它的梯度必须保持为零，而不是 NaN。",
    ),
    "ladder.property.flash-bwd-dk-dv-transposed": (
        "The value and key gradients gather over the queries, so they use the transposed weights.",
        "值和键的梯度是在查询上汇总的，所以要用转置后的权重。",
    ),
    "ladder.property.mla-scale-without-rope-dim": (
        "The score of each head sums over both its nope and its rope dimensions, so the scale counts both.",
        "每个头的分数同时累加 nope 维和 rope 维，所以缩放要把两部分都算上。",
    ),
    "ladder.property.mla-rope-on-nope": (
        "Only the rope part of each head is rotated; the nope part carries no position.",
        "只有每个头的 rope 部分需要旋转；nope 部分不携带位置信息。",
    ),
    "ladder.property.mla-kv-b-split-global": (
        "The up-projection's output is laid out head by head, each head holding its key part then its value part.",
        "上投影的输出是按头排列的，每个头先是键的部分，再是值的部分。",
    ),
    "ladder.property.mla-missing-kv-norm": (
        "The compressed latent is normalised before it is projected up into keys and values.",
        "压缩后的潜变量在上投影成键和值之前要先归一化。",
    ),
    "ladder.property.rope-wrong-layout": (
        "The statement says which features form a rotated pair; your code pairs different ones.",
        "题目规定了哪些特征组成一个旋转对；你的代码配对的是别的特征。",
    ),
    "ladder.property.rope-inv-freq-exponent": (
        "Pair i turns at base to the power minus 2i over d: the exponent counts each pair twice.",
        "第 i 对的转速是 base 的 -2i/d 次方：指数里每一对要算两次。",
    ),
    "ladder.property.rope-rotation-direction": (
        "Each pair turns forward by its angle; your rotation runs the other way.",
        "每一对都按它的角度向前旋转；你的旋转方向反了。",
    ),
    "ladder.property.rope-positions-ignored": (
        "Each token is rotated at the position the caller gives, not at its index in the tensor.",
        "每个 token 要按调用方给出的位置旋转，而不是按它在张量中的下标。",
    ),
    "ladder.property.cache-positions-restart": (
        "New tokens continue after the tokens already in the cache; their positions do not start from zero again.",
        "新 token 接在 cache 中已有的 token 之后；它们的位置不会再从零开始。",
    ),
    "ladder.property.cache-stores-repeated-heads": (
        "The cache holds the few KV heads; they are shared out to the query heads only for the attention itself.",
        "cache 中保存的是少量的 KV 头；只有在计算注意力时才把它们分配给各个查询头。",
    ),
    "ladder.property.cache-concat-wrong-dim": (
        "New keys join the cache along the sequence axis.",
        "新的键要沿着序列轴接到 cache 上。",
    ),
    "ladder.property.rope-on-values": (
        "Rotary embeddings rotate queries and keys only; the values carry no position.",
        "旋转位置编码只作用于查询和键；值不携带位置信息。",
    ),
    "ladder.property.cache-rerotated": (
        "Cached keys were rotated when they were stored; only the new keys are rotated now.",
        "cache 中的键在存入时已经旋转过；现在只需要旋转新的键。",
    ),
    "ladder.property.mla-absorb-wrong-slice": (
        "The absorbed key and value matrices come out of the up-projection head by head, each head's key rows then its value rows.",
        "吸收用的键矩阵和值矩阵要按头从上投影中取出：每个头先是键的行，再是值的行。",
    ),
    "ladder.property.mla-cache-unnormalized": (
        "The latent cache holds the normalised latent, so that reading it back needs no second normalisation.",
        "潜变量 cache 中保存的是归一化之后的潜变量，读回时不需要再归一化一次。",
    ),
    "ladder.property.mla-materializes-cache-heads": (
        "Decoding works in the latent space: the per-head keys and values of the whole cache are never rebuilt.",
        "解码在潜空间中进行：整个 cache 的逐头键和值从不需要重建。",
    ),
    "ladder.property.latent-queries-from-input": (
        "The latents ask the questions (the queries); the input only supplies keys and values.",
        "由潜变量提出问题（查询）；输入只提供键和值。",
    ),
    "ladder.property.banned-api": (
        "The kata asks for attention written by hand; a library kernel does the work the kata is about.",
        "这道题要求手写注意力；调用库里的内核就跳过了这道题要练的东西。",
    ),
    "ladder.property.dtype-not-preserved": (
        "The output comes back in the dtype the inputs came in.",
        "输出的 dtype 要和输入的 dtype 一致。",
    ),
    "ladder.property.input-mutated": (
        "The caller's tensors must be left as they came; work on new tensors instead of writing into theirs.",
        "调用方的张量必须保持原样；要在新的张量上计算，而不是写进它们的张量。",
    ),
    "ladder.property.returns-attention-weights": (
        "The function returns the attended values, one vector per query, and nothing else.",
        "函数返回的是注意力加权后的值（每个查询一个向量），不返回别的。",
    ),
    "ladder.property.wrong-return-type": (
        "The function returns one tensor of the output's shape.",
        "函数返回一个形状与输出相同的张量。",
    ),
    "ladder.property.nondeterministic-output": (
        "The same inputs must give the same output: nothing random belongs in this function.",
        "相同的输入必须得到相同的输出：这个函数里不应有任何随机的东西。",
    ),
    "ladder.property.weights-unmappable": (
        "The module's layers have the names and shapes the statement gives, so that trained weights load into them.",
        "模块的各层要使用题目给出的名字和形状，这样训练好的权重才能加载进去。",
    ),
    "ladder.property.numpy-float-warning": (
        "The right values, but an infinity or NaN was computed on the way; a stable softmax never produces one.",
        "数值是对的，但中间算出了无穷大或 NaN；稳定的 softmax 不会产生它们。",
    ),
    "ladder.property.topk-before-mask": (
        "The top-k places go to keys the query may attend: the mask comes first.",
        "top-k 的名额只给查询可以关注的键：先应用 mask。",
    ),
    "ladder.property.topk-softmax-not-renormalized": (
        "The kept keys' weights must sum to 1 among themselves.",
        "被保留的键的权重之间要归一化，和为 1。",
    ),
    "ladder.property.topk-wrong-dim": (
        "Each query keeps its own best keys: the top-k runs along the keys.",
        "每个查询保留它自己最好的那些键：top-k 沿着键的方向进行。",
    ),
    "ladder.property.topk-keeps-masked": (
        "A blocked key never takes a place or gets weight, even when the row has fewer allowed keys than k.",
        "被屏蔽的键既不能占名额也不能得到权重，即使这一行允许的键少于 k 个。",
    ),
    "ladder.property.topk-off-by-one": (
        "Exactly k keys are kept per query (fewer only when fewer are allowed).",
        "每个查询恰好保留 k 个键（只有允许的键少于 k 时才少）。",
    ),
    "ladder.property.global-one-direction": (
        "Global tokens attend every token, and every token attends them: both directions.",
        "全局 token 关注所有 token，所有 token 也都关注全局 token：两个方向都有。",
    ),
    "ladder.property.window-in-tokens": (
        "The block window counts blocks, not tokens.",
        "块窗口按块计数，而不是按 token 计数。",
    ),
    "ladder.property.random-blocks-transposed": (
        "Each query block attends its own random key blocks: the random choice picks keys for a row, not rows for a key.",
        "每个查询块关注它自己的随机键块：随机选择是为一行挑选键，而不是为一个键挑选行。",
    ),
    "ladder.property.last-block-dropped": (
        "A sequence that does not divide into blocks still has a last, shorter block that counts.",
        "不能整除成块的序列仍有最后一个较短的块，它也要算进去。",
    ),
    "ladder.property.block-window-off-by-one": (
        "The block window's edge is inclusive as the statement defines it; your band is one block off.",
        "按题目的定义，块窗口的边界是包含在内的；你的带差了一个块。",
    ),
    "ladder.property.longformer-window-as-total": (
        "The window is the number of keys on each side of the query, not the whole width.",
        "窗口是查询每一侧的键数，而不是总宽度。",
    ),
    "ladder.property.padding-ignores-global": (
        "A padded token is invisible to everyone, even when it is global.",
        "padding 的 token 对所有人都不可见，即使它是全局 token。",
    ),
    "ladder.property.padded-queries-zeroed": (
        "Queries at padded positions are still computed as usual; only padded keys are hidden.",
        "padding 位置上的查询照常计算；只有 padding 的键被屏蔽。",
    ),
    "ladder.property.lse-empty-row-finite": (
        "A row with no allowed key has no weight at all: its log-sum-exp is minus infinity.",
        "没有可关注键的行完全没有权重：它的 log-sum-exp 是负无穷。",
    ),
    "ladder.property.sink-tokens-evicted": (
        "The first few tokens of the stream must stay in the cache for ever: the model leans on them as a resting place for its attention, so eviction must drop the tokens right after them, never the sinks themselves.",
        "流中最前面的几个 token 必须永远留在缓存里：模型把它们当作注意力的落脚点，所以淘汰应该丢掉紧跟在它们之后的 token，而不是 sink 本身。",
    ),
    "ladder.property.positions-not-reassigned": (
        "Positions are slots in the cache. When tokens are evicted, every kept window key moves to a lower slot, so its rotary position must move with it; a key that keeps its old rotation claims a position it no longer has.",
        "位置就是缓存中的槽位。淘汰 token 后，每个保留的窗口键都移到了更靠前的槽位，它的旋转位置也必须跟着移动；保留旧旋转的键占着一个它已经不在的位置。",
    ),
    "ladder.property.rerotation-wrong-direction": (
        "A kept key moves back by the number of evicted tokens, so its rotation must go back by that amount too; going forward puts it twice as far from its slot.",
        "保留的键往前移动了被淘汰 token 的个数，所以它的旋转也必须往回转同样的量；往前转会让它离自己的槽位差出两倍。",
    ),
    "ladder.property.alibi-slopes-wrong-for-non-power-of-two": (
        "The geometric slope sequence is defined for a power-of-two head count; for other counts the extra heads take interleaved slopes from the next power of two, not a sequence stretched over all heads.",
        "几何序列形式的斜率是为 2 的幂个头定义的；头数不是 2 的幂时，多出来的头从下一个 2 的幂的斜率中隔一个取一个，而不是把序列拉伸到所有头上。",
    ),
    "ladder.property.alibi-bias-sign": (
        "The linear bias is a penalty: the further a key is from the query, the lower its logit must become.",
        "线性偏置是一种惩罚：键离查询越远，它的 logit 就应该越低。",
    ),
    "ladder.property.alibi-distance-top-left": (
        "Distance is measured between positions, and a query's position counts the keys already in the cache before it; measuring from its row number alone ignores them whenever there are more keys than queries.",
        "距离是在位置之间度量的，查询的位置要算上缓存里排在它前面的键；只用它的行号度量，在键比查询多时就忽略了这些键。",
    ),
    "ladder.property.alibi-bias-scaled": (
        "The distance penalty is added to the logits after they are scaled; shrinking it with the scale makes every head's penalty weaker than its slope says.",
        "距离惩罚是在 logits 缩放之后加上的；让它也跟着缩放，会使每个头的惩罚比它的斜率规定的更弱。",
    ),
    "ladder.property.alibi-bias-not-symmetric": (
        "The penalty depends on how far a key is, in either direction; keys after the query must be penalised as much as keys the same distance before it.",
        "惩罚取决于键离得多远，与方向无关；查询之后的键和之前同样距离的键应受到同样的惩罚。",
    ),
    "ladder.property.block-table-ignored": (
        "A sequence's tokens live in whatever physical blocks its table lists, in that order; reading the pool's blocks in their own order reads another sequence's keys.",
        "一个序列的 token 存放在它的块表列出的物理块里，按块表的顺序排列；按缓存池自身的顺序读块，读到的是别的序列的键。",
    ),
    "ladder.property.context-length-off-by-one": (
        "The length already counts the new token, whose key is in the cache: a sequence of length n attends exactly its first n slots, no more and no fewer.",
        "长度已经算上了新 token，它的键已经在缓存里：长度为 n 的序列正好关注它的前 n 个槽位，不多也不少。",
    ),
    "ladder.property.paged-gathers-dense-kv": (
        "Paging exists so that each sequence reads only its own blocks; building the whole padded batch of keys first costs the memory the paging was meant to save.",
        "分页的意义在于每个序列只读取自己的块；先拼出整个补齐后的键批次，花掉的正是分页本来要省下的内存。",
    ),
    "ladder.property.split-lse-combine-unweighted": (
        "Each split's output is normalised over its own keys only; merging them exactly needs each split's share of the total weight, which its log-sum-exp carries.",
        "每个切分的输出只在它自己的键上归一化；要精确地合并，需要每个切分在总权重中所占的份额，而这个份额由它的 log-sum-exp 给出。",
    ),
    "ladder.property.empty-split-nan": (
        "A split with no keys contributes nothing: its weight must be exactly zero, and nothing undefined may come out of it.",
        "没有键的切分不贡献任何东西：它的权重必须正好是零，也不能产生任何未定义的值。",
    ),
    "ladder.property.missing-load-mask": (
        "A block has a fixed size, but the tensor's last block is usually partial: every lane past the tensor's end must be masked when it is loaded.",
        "分块的大小是固定的，而张量的最后一块通常不满：读取时，超出张量末尾的每个通道都必须被 mask 掉。",
    ),
    "ladder.property.missing-store-mask": (
        "The last block of the output is usually partial: lanes past the end of the output must not be written.",
        "输出的最后一块通常不满：超出输出末尾的通道不能被写入。",
    ),
    "ladder.property.other-not-neg-inf": (
        "A masked lane must not take part in the maximum or the sum: the value it is loaded with has to vanish under the exponential.",
        "被 mask 的通道不能参与最大值和求和：它读取时填入的值必须在指数运算后消失。",
    ),
    "ladder.property.grid-misses-tail": (
        "Every row must belong to some program: the number of programs has to round up, so that the last partial block of rows is computed too.",
        "每一行都必须属于某个 program：program 的数量要向上取整，这样最后不满的那一块行也会被计算。",
    ),
    "ladder.property.stride-assumed-contiguous": (
        "A tensor can be a transposed or sliced view: where an element lives is given by its strides, not by the shape alone.",
        "张量可能是转置或切片后的视图：元素在哪里由它的步长决定，而不是只由形状决定。",
    ),
    "ladder.property.block-too-small-for-dot": (
        "The matrix units of a GPU work on tiles of at least sixteen in every dimension; smaller blocks cannot be multiplied there.",
        "GPU 的矩阵单元处理每一维至少为十六的分块；更小的块无法在那里做乘法。",
    ),
    "ladder.property.torch-instead-of-triton": (
        "The kata grades a kernel: the loads, reductions, exponentials and products must happen inside it, the wrapper only prepares and launches.",
        "这道题评测的是 kernel：读取、归约、指数和乘法都必须在 kernel 内完成，wrapper 只负责准备和启动。",
    ),
    "ladder.property.layout-transposed": (
        "Your statement fixes the order of the axes of every tensor; code written for the other order reads heads as positions.",
        "题目规定了每个张量各维的顺序；按另一种顺序写的代码会把头当成位置来读。",
    ),
    "ladder.property.argument-names-differ": (
        "The caller passes arguments by the names your statement gives; other names mean they never arrive.",
        "调用方按题目给出的名字传参；换了名字，参数就传不进来。",
    ),
    "ladder.property.scale-convention-swapped": (
        "Your statement says whether the logits are multiplied by a scale or divided by a temperature; using the other reading inverts the factor.",
        "题目规定了 logits 是乘以缩放系数还是除以温度；按另一种理解会把系数取反。",
    ),
    "ladder.property.flag-convention-inverted": (
        "Your statement says what the flag means when it is true; reading it the other way applies the behaviour exactly when it should not.",
        "题目规定了标志为真时的含义；反过来理解，恰好会在不该生效时生效。",
    ),
    "ladder.property.mask-shape-convention": (
        "Your statement fixes the mask's shape; a mask of another shape broadcasts differently or not at all.",
        "题目规定了 mask 的形状；换一种形状，广播方式就变了，甚至无法广播。",
    ),
    "ladder.property.topk-keeps-smallest": (
        "Top-k keeps each query's largest scores.",
        "top-k 保留的是每个查询最大的那些分数。",
    ),
}
