"""Problem sets' sentences: handouts, READMEs, class reports, feedback (catalogue part; `checker.messages.msg` looks them up)."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    "report.report": ("Class report", "班级报告"),
    "report.graded": ("Graded", "评测时间"),
    "report.students": ("Students", "学生数"),
    "report.katas": ("Katas", "题目数"),
    "report.submissions": ("Submissions graded", "已评测提交"),
    "report.mean": ("Mean score", "平均分"),
    "report.median": ("Median score", "中位数"),
    "report.distribution": ("Score distribution", "分数分布"),
    "report.per_kata": ("Pass rate per kata", "各题通过率"),
    "report.kata": ("Kata", "题目"),
    "report.submitted": ("Submitted", "已提交"),
    "report.passed": ("Passed", "通过"),
    "report.pass_rate": ("Pass rate", "通过率"),
    "report.mean_points": ("Mean points", "平均得分"),
    "report.missing": ("Missing", "缺交"),
    "report.late": ("Late", "迟交"),
    "report.timeouts": ("Timeouts", "超时"),
    "report.errors": ("Errors", "出错"),
    "report.mistakes": ("Most common mistakes", "最常见的错误"),
    "report.mistake": ("Mistake", "错误"),
    "report.share": ("Share", "占比"),
    "report.who": ("Students", "学生"),
    "report.no_mistakes": ("No mistakes were diagnosed.", "没有诊断出错误。"),
    "report.student": ("Student", "学生"),
    "report.total": ("Total", "总分"),
    "report.percent": ("Percent", "百分比"),
    "report.notes": ("Notes", "备注"),
    "report.config": ("Grading configuration", "评分配置"),
    "report.weights": ("Tier weights", "层级权重"),
    "report.limits": ("Limits", "限制"),
    "report.deadline": ("Deadline", "截止时间"),
    "report.penalty": ("Late penalty", "迟交扣分"),
    "report.none": ("none", "无"),
    "report.of": ("of", "/"),
    "report.in": ("in", "出现在"),
    "report.per_call": ("per call", "每次调用"),
    "report.per_submission": ("per submission", "每份提交"),
    "report.count": ("students", "人"),
    "report.tier": ("Tier", "层级"),
    "report.tests_passed": ("Tests passed", "通过的测试"),
    "report.what_went_wrong": ("What went wrong", "问题诊断"),
    "report.failed_tests": ("Failed tests", "未通过的测试"),
    "report.missing_file": ("No file was handed in for this kata.", "这道题没有提交文件。"),
    "report.late_note": ("Handed in late", "迟交"),
    "report.all_pass": ("All required tests pass. Well done!", "所有必需测试均已通过，做得好！"),
    "report.statuses.pass": ("pass", "通过"),
    "report.statuses.fail": ("fail", "未通过"),
    "report.statuses.error": ("error", "出错"),
    "report.statuses.timeout": ("timeout", "超时"),
    "report.statuses.missing": ("missing", "缺交"),
    "report.fix_line_plain": ("Fix: {fix}", "修改建议： {fix}"),
    "report.more_tests": ("... and {n} more", "……还有 {n} 个"),
    "report.students_h": ("Students", "学生"),
    "report.title_line": ("Feedback: {student}", "反馈：{student}"),
    "report.total_line": (
        "Total: **{total} / {max}** ({pct}%)",
        "总分：**{total} / {max}**（{pct}%）",
    ),
    "report.status_line": (
        "Status: **{status}** · Score: **{score} / {points}**",
        "状态：**{status}** · 得分：**{score} / {points}**",
    ),
    "report.code_line": ("Your code (line {line}):", "你的代码（第 {line} 行）："),
    "report.fix_line": ("*Fix:* {fix}", "*修改建议：* {fix}"),
    "report.tiers.core": ("core", "核心"),
    "report.tiers.edge": ("edge", "边界情况"),
    "report.tiers.efficient": ("efficient", "效率"),
    "report.severities.essential": ("essential", "必须修复"),
    "report.severities.actionable": ("actionable", "建议修复"),
    "report.severities.informative": ("informative", "提示"),
    "report.severities.celebratory": ("celebratory", "做得好"),
    "report.needs_review": ("Needs review", "待人工查看"),
    "report.needs_review_intro": (
        "What the static policy could not resolve (not banned, graded as usual): a person should read these lines.",
        "静态规则无法判断的写法（并不禁止，照常评测）：需要有人看一下这些行。",
    ),
    "report.needs_review_feedback": (
        "Your file uses constructs the automatic checks cannot read; your instructor may look at these lines:",
        "你的文件用了自动检查读不懂的写法；讲师可能会查看这些行：",
    ),
    "handout.handout": ("Problem set", "练习题集"),
    "handout.contents": ("Contents", "目录"),
    "handout.kata": ("Kata", "题目"),
    "handout.difficulty": ("Difficulty", "难度"),
    "handout.minutes": ("Minutes", "建议用时（分钟）"),
    "handout.file": ("Hand in", "提交文件"),
    "handout.due": ("Due", "截止时间"),
    "handout.conventions": ("Conventions and shape legend", "通用约定与形状说明"),
    "handout.legend": ("Shape legend", "形状字母表"),
    "handout.letter": ("Letter", "字母"),
    "handout.meaning": ("Meaning", "含义"),
    "handout.signatures": ("What to implement", "需要实现的接口"),
    "handout.hand_in": ("Hand in this kata as", "本题提交文件名"),
    "handout.see_conventions": (
        "*The shared conventions are printed once, at the start of this handout.*",
        "*通用约定只在讲义开头印一次。*",
    ),
    "handout.level_guided": (
        "Your file marks where to write with `# BEGIN SOLUTION` / `# END SOLUTION`.",
        "你的文件用 `# BEGIN SOLUTION` / `# END SOLUTION` 标出了要写代码的位置。",
    ),
    "handout.level_scratch": (
        "Your file has the signatures and docstrings; write the bodies.",
        "你的文件里有签名和文档字符串，函数体需要你来写。",
    ),
    "handout.difficulty_names.easy": ("easy", "简单"),
    "handout.difficulty_names.medium": ("medium", "中等"),
    "handout.difficulty_names.hard": ("hard", "困难"),
    "handout.generated": ("Generated", "生成于"),
    "readme.heading": ("## English", "## 中文"),
    "readme.intro": (
        "This folder is your problem set. Each kata has its own folder with the statement, the file you complete and a few public sample tests. `handout.html` is a printable version of every statement (open it in a browser and print it).",
        "这个文件夹就是你的练习题集。每道题有自己的文件夹，里面有题目说明、你要完成的文件和几个公开样例测试。`handout.html` 是所有题目的可打印版本（用浏览器打开后打印）。",
    ),
    "readme.table.0": ("Kata", "题目"),
    "readme.table.1": ("Title", "标题"),
    "readme.table.2": ("Difficulty", "难度"),
    "readme.table.3": ("Minutes", "建议用时（分钟）"),
    "readme.table.4": ("File to hand in", "提交文件"),
    "readme.write_h": ("Write your solution", "编写答案"),
    "readme.write": (
        "Complete `{file}` in the kata's folder. Keep the function and class names and the parameter names of the signatures: the grader calls them by name. Use plain PyTorch (or NumPy where the kata says so); fused attention kernels (`scaled_dot_product_attention`, `flex_attention`, `nn.MultiheadAttention`) are banned and detected when your code runs.",
        "在题目文件夹里完成 `{file}`。不要修改函数名、类名和签名中的参数名：评测按名字调用它们。只用 PyTorch（题目说明要求时用 NumPy）；禁止使用融合注意力内核（`scaled_dot_product_attention`、`flex_attention`、`nn.MultiheadAttention`），代码运行时会被检测到。",
    ),
    "readme.guided": (
        "Your files mark where to write with `# BEGIN SOLUTION` / `# END SOLUTION`.",
        "你的文件用 `# BEGIN SOLUTION` / `# END SOLUTION` 标出了要写代码的位置。",
    ),
    "readme.scratch": (
        "Your files contain the signatures and docstrings; write the bodies.",
        "你的文件里有签名和文档字符串，函数体需要你来写。",
    ),
    "readme.check_h": ("Check your work", "自测"),
    "readme.check": (
        "Each kata folder has public sample tests. They need Python, PyTorch, NumPy and pytest; run them from this folder:",
        "每个题目文件夹里都有公开样例测试，需要 Python、PyTorch、NumPy 和 pytest；在本文件夹中运行：",
    ),
    "readme.every": ("every kata", "所有题目"),
    "readme.one": ("one kata", "单个题目"),
    "readme.check_note": (
        "Passing the samples does not mean full marks: the hidden tests also cover edge cases (fully masked rows, float32, large logits, gradients, ...). Read the statement and its conventions carefully.",
        "通过样例不等于满分：隐藏测试还覆盖边界情况（整行被遮掩、float32、很大的 logits、梯度等）。请仔细阅读题目说明和通用约定。",
    ),
    "readme.hand_h": ("Hand in", "提交"),
    "readme.hand": (
        "Hand in one folder named after you (your student id), containing exactly one file per kata, named as below, with no sub-folders:",
        "提交一个以你的名字（学号）命名的文件夹，里面每道题恰好一个文件，文件名如下，不要有子文件夹：",
    ),
    "readme.hand_note": (
        "Do not rename the files and do not import anything from outside the standard library, PyTorch and NumPy. A missing file scores 0 for that kata; a file modified after the deadline is marked late.",
        "不要重命名文件，除标准库、PyTorch 和 NumPy 外不要导入其他东西。缺少的文件该题记 0 分；截止时间之后修改的文件会被标记为迟交。",
    ),
    "readme.due": ("Deadline: **{due}**.", "截止时间：**{due}**。"),
    "readme.grading_h": ("How it is graded", "评分方式"),
    "readme.grading": (
        "Each kata is worth {points} points, split by test tier: {weights}. Your code runs in a separate process with a time limit of {timeout:g} s per kata, so an infinite loop only costs you that kata.",
        "每道题 {points} 分，按测试层级分配：{weights}。你的代码在单独的进程里运行，每道题限时 {timeout:g} 秒，所以死循环只影响那一道题。",
    ),
    "readme.tier.core": ("core", "核心"),
    "readme.tier.edge": ("edge cases", "边界情况"),
    "readme.tier.efficient": ("efficiency", "效率"),
}

# Grading a problem set (checker/sets/grade.py): titles of the results made when no check ran.
MESSAGES.update(
    {
        "grade.synthetic.unreadable-file": ("The file could not be read", "文件无法读取"),
        "grade.synthetic.grader-broken": (
            "The grader of this kata is broken (not your fault)",
            "本题的评测程序有问题（不是你的错）",
        ),
        "grade.synthetic.grader-internal-error": (
            "attnkata failed while grading (not your fault)",
            "attnkata 评测时出错（不是你的错）",
        ),
        "grade.synthetic.grader-process-died": ("The grading process ended", "评测进程意外结束"),
        "grade.synthetic.watchdog": ("Time limit exceeded", "超出时间限制"),
        "grade.synthetic.other": ("Grading failed", "评测失败"),
        # The class report's copy detection (checker/sets/similarity.py).
        "similarity.title": ("Possible copies", "疑似抄袭"),
        "similarity.none": (
            "No pair of submissions is suspiciously similar.",
            "没有发现可疑的相似提交。",
        ),
        "similarity.note": (
            "These submissions are the same program up to renamed identifiers, reordered independent "
            "statements, comments and formatting. Check them yourself before acting.",
            "以下提交在改名、调换无依赖语句顺序、去掉注释与格式之后几乎相同。请人工核实。",
        ),
    }
)

# `kata set export` (checker/sets/export.py): where the autograder gets attnkata from.
MESSAGES.update(
    {
        "export.building": (
            "exporting (building the attnkata wheel it carries)...",
            "正在导出（生成随附的 attnkata wheel）……",
        ),
        "export.wheel_or_index": (
            "--wheel ships a wheel; --from-index/--index-url install from an index: pick one",
            "--wheel 随附一个 wheel；--from-index/--index-url 从包索引安装：二者只能选一个",
        ),
        "export.bad_index": (
            "--index-url {url} is not a URL (https://..., http://... or file://...)",
            "--index-url {url} 不是 URL（应为 https://...、http://... 或 file://...）",
        ),
        "export.not_a_wheel": ("{path} is not an attnkata wheel", "{path} 不是 attnkata 的 wheel"),
        "export.not_a_wheel_hint": (
            "leave --wheel out: the export builds the wheel of this attnkata itself",
            "去掉 --wheel 即可：导出时会自动生成当前 attnkata 的 wheel",
        ),
        "export.note_built": (
            "the autograder installs attnkata from {wheel}, built from this installation and "
            "carried in the export (with constraints.txt: the versions of its dependencies)",
            "自动评分器从 {wheel} 安装 attnkata：它由当前安装生成并随导出附带"
            "（另附 constraints.txt：依赖的版本）",
        ),
        "export.note_wheel": (
            "the autograder installs attnkata from the wheel you gave, {wheel}, carried in the export",
            "自动评分器从你提供的 wheel（{wheel}）安装 attnkata，它随导出附带",
        ),
        "export.note_index": (
            "the autograder installs attnkata {version} from {index} when its image is built: "
            "it builds only if that index has this version",
            "自动评分器在构建镜像时从 {index} 安装 attnkata {version}：只有该索引提供这个版本时才能构建成功",
        ),
    }
)

# What a static-policy finding costs in a graded set (checker/sets/policy_cost.py): the file
# was run anyway; the manifest's `grading.policy` decides the cost.
MESSAGES.update(
    {
        "grade.policy_cost.flag": (
            "In this problem set it costs no points (your instructor sees it); your file was "
            "run and graded as usual.",
            "在这个题集里它不扣分（老师会看到）；你的文件照常运行和评测。",
        ),
        "grade.policy_cost.penalty": (
            "In this problem set it costs {pct} of this file's score (your instructor's "
            "choice); your file was still run, so its other mistakes are listed too.",
            "在这个题集里它会扣掉本文件得分的 {pct}（老师的设置）；文件仍然运行了，"
            "所以其他错误也一并列出。",
        ),
        "grade.policy_cost.zero": (
            "In this problem set such a file earns no points (your instructor's choice); it was "
            "still run, so its other mistakes are listed too.",
            "在这个题集里这样的文件不得分（老师的设置）；它仍然运行了，所以其他错误也一并列出。",
        ),
        "grade.policy_cost.banned": (
            "`{what}` (line {line}) reaches a fused attention kernel, which every kata bans: "
            "the file earns no points.",
            "`{what}`（第 {line} 行）调用了融合注意力内核，所有题目都禁止这样做：该文件不得分。",
        ),
        "grade.policy_note": ("static policy: {ids} ({cost})", "静态策略：{ids}（{cost}）"),
        "grade.policy_note.flag": ("flagged, no points taken", "仅标记，不扣分"),
        "grade.policy_note.penalty": ("-{pct}", "扣 {pct}"),
        "grade.policy_note.zero": ("no points", "不得分"),
    }
)
