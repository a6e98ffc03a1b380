"""The terminal's and the HTML page's labels (catalogue part; `checker.messages.msg` looks them up)."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    "render.passed": ("passed", "通过"),
    "render.diagnosis": ("What went wrong", "问题诊断"),
    "render.fix": ("Fix", "修改建议"),
    "render.evidence": ("Evidence", "依据"),
    "render.all_pass": ("All required tests pass.", "所有必需测试均已通过。"),
    "render.line": ("line", "行"),
    "render.isolation": ("isolation", "隔离方式"),
    "render.limit_words": (
        "time limits: {call:g} s per call, {total:g} s in all (from the reference's own time; --timeout to change)",
        "时间限制：每次调用 {call:g} 秒，总计 {total:g} 秒（按参考实现的耗时确定；可用 --timeout 修改）",
    ),
    "render.seed": (
        "inputs: seed {seed} (`--seed {seed}` grades with the same inputs again)",
        "输入：种子 {seed}（用 `--seed {seed}` 可以用同样的输入再评一次）",
    ),
    "render.same_as": ("(same message as {test})", "（信息同 {test}）"),
    # a kata that needs an optional part of attnkata (kata.toml `requires`)
    "extra.missing": (
        "{kata} needs attnkata[{extras}], which is not installed",
        "{kata} 需要 attnkata[{extras}]，但它没有安装",
    ),
    "extra.install": (
        'install it: python -m pip install "attnkata[{extras}]" (in a checkout: '
        'python -m pip install -c constraints.txt -e ".[{extras}]")',
        '安装方法：python -m pip install "attnkata[{extras}]"（在源码目录中：'
        'python -m pip install -c constraints.txt -e ".[{extras}]"）',
    ),
    "extra.list_status": ("needs attnkata[{extras}]", "需要 attnkata[{extras}]"),
    "speed.best": (
        "best GPU times: {items}",
        "GPU 最佳用时：{items}",
    ),
    "grid.caption": (
        "which keys each query may attend (rows = queries, columns = keys; ■ attends, · not, ? NaN)",
        "每个查询能关注哪些键（行 = 查询，列 = 键；■ 关注，· 不关注，? NaN）",
    ),
    "grid.expected": ("expected", "应为"),
    "grid.got": ("yours", "你的"),
    "grid.heads": ("KV head used by each query head", "每个查询头使用的 KV 头"),
    "grid.not_run": (
        "(your code did not return a mask here)",
        "（你的代码在这里没有返回可画的结果）",
    ),
    "progress.checking": ("checking", "正在检查"),
    "progress.limit": (
        "limit {call:g}s per call, {total:g}s in all",
        "限时：每次调用 {call:g} 秒，总计 {total:g} 秒",
    ),
    "progress.diagnosis": ("diagnosing", "正在诊断"),
    "mistakes.title": ("mistake catalogue", "错误目录"),
    "mistakes.for": ("mistakes in", "适用于"),
    "mistakes.id": ("id", "id"),
    "mistakes.severity": ("severity", "严重程度"),
    "mistakes.mistake": ("mistake", "错误"),
    "mistakes.katas": ("katas", "题目"),
    "mistakes.every": ("every kata", "所有题目"),
    "mistakes.fix": ("Fix", "修改建议"),
    "mistakes.hides": ("Hides when", "何时看不出来"),
    "mistakes.where": ("Read", "参阅"),
    "mistakes.demo": ("Demonstration", "演示"),
    "mistakes.output": ("Output", "输出"),
    "mistakes.no_demo": ("(no demonstration for this one)", "（这一条没有演示）"),
    "mistakes.hint": (
        "`kata explain ID` shows one in full",
        "用 `kata explain ID` 查看某一条的完整说明",
    ),
    "html.fix": ("Fix", "修改建议"),
    "html.evidence": ("Evidence", "依据"),
    "html.tests": ("tests", "测试"),
    "html.expected": ("expected", "应为"),
    "html.got": ("yours", "你的"),
    "html.heads": ("KV head used by each query head", "每个查询头使用的 KV 头"),
    "html.line": ("line", "行"),
    "html.isolation": ("isolation", "隔离方式"),
    "html.grid": (
        "which keys each query may attend (rows = queries, columns = keys)",
        "每个查询能关注哪些键（行 = 查询，列 = 键）",
    ),
    "html.passed": ("passed", "通过"),
}

MESSAGES.update(
    {
        # Lists in running text.
        "list_sep": (", ", "、"),
        # A hint made from the mistake catalogue's title and fix (`kata hint`, `kata mock hint`).
        "hint.title_and_fix": ("{title}. {fix}", "{title}。{fix}"),
        "hint.title": ("Hint", "提示"),
        "hint.for_mistake": ("for the mistake {id}", "针对错误 {id}"),
        # The notebook magic.
        "notebook.not_run": (
            "(not run in the kernel: it did not load in the sandbox)",
            "（没有在内核中运行：它在沙箱里没能加载）",
        ),
        # What to practise next (checker/schedule.py).
        "schedule.due": (
            "due for review (FSRS): last practised {ago} days ago, rated '{rating}'",
            "按 FSRS 该复习了：上次练习在 {ago} 天前，评为“{rating}”",
        ),
        "schedule.recurring": (
            "; it exercises '{mistake}', a mistake you made in {n} sessions",
            "；它考查的“{mistake}”是你在 {n} 次练习中都犯过的错误",
        ),
        "schedule.new_with_mistake": (
            "new to you, and it exercises '{mistake}', a mistake you made in {n} sessions",
            "你还没练过，而且它考查的“{mistake}”是你在 {n} 次练习中都犯过的错误",
        ),
        "schedule.next_new": (
            "the next kata you have not practised, in teaching order",
            "按教学顺序，下一道你还没练过的题",
        ),
        "schedule.nothing_due": (
            "nothing is due; this one comes back first, in {wait} days",
            "目前没有到期的题；这一道最先到期，还有 {wait} 天",
        ),
    }
)

MESSAGES.update(
    {
        # `%kata start`: the new cell appears only in a live front end; the line says where else to look.
        "notebook.started": (
            "Started {kata}: the skeleton is in a new cell below, marked `%%kata {kata} --record` "
            "(counted in your history). No new cell? It is also in {path}.",
            "已开始 {kata}：骨架代码在下方新的单元格里，标记为 `%%kata {kata} --record`"
            "（计入你的练习记录）。没有看到新单元格？它也在 {path}。",
        ),
        # `kata check` on the skeleton as `kata start` copied it (checker/runner.py).
        "skeleton.title": ("This is the untouched skeleton", "这还是未改动的骨架代码"),
        "skeleton.explanation": (
            "{file} is still the skeleton that `kata start {kata}` copied: none of your code has "
            "been graded yet. Write the parts that raise NotImplementedError; `kata hint {kata}` "
            "gives a first hint, and `kata show {kata}` the statement.",
            "{file} 还是 `kata start {kata}` 复制的骨架代码：还没有你自己的代码可评。请实现抛出 "
            "NotImplementedError 的部分；`kata hint {kata}` 给出第一条提示，`kata show {kata}` 显示题目。",
        ),
    }
)
