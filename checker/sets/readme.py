"""The student folder's README: what is in it, how to check, how to hand in (en and/or zh)."""

from __future__ import annotations

from attnkata.checker.sets.manifest import Manifest

TEXT = {
    "en": {
        "intro": "This folder is your problem set. Each kata has its own folder with the statement, "
                 "the file you complete and a few public sample tests. `handout.html` is a printable "
                 "version of every statement (open it in a browser and print it).",
        "table": ("Kata", "Title", "Difficulty", "Minutes", "File to hand in"),
        "write_h": "Write your solution",
        "write": "Complete `{file}` in the kata's folder. Keep the function and class names and the "
                 "parameter names of the signatures: the grader calls them by name. Use plain PyTorch "
                 "(or NumPy where the kata says so); fused attention kernels "
                 "(`scaled_dot_product_attention`, `flex_attention`, `nn.MultiheadAttention`) are banned "
                 "and detected when your code runs.",
        "guided": "Your files mark where to write with `# BEGIN SOLUTION` / `# END SOLUTION`.",
        "scratch": "Your files contain the signatures and docstrings; write the bodies.",
        "check_h": "Check your work",
        "check": "Each kata folder has public sample tests. They need Python, PyTorch, NumPy and pytest; "
                 "run them from this folder:",
        "every": "every kata", "one": "one kata",
        "check_note": "Passing the samples does not mean full marks: the hidden tests also cover edge "
                      "cases (fully masked rows, float32, large logits, gradients, ...). Read the statement "
                      "and its conventions carefully.",
        "hand_h": "Hand in",
        "hand": "Hand in one folder named after you (your student id), containing exactly one file "
                "per kata, named as below, with no sub-folders:",
        "hand_note": "Do not rename the files and do not import anything from outside the standard "
                     "library, PyTorch and NumPy. A missing file scores 0 for that kata; a file modified "
                     "after the deadline is marked late.",
        "due": "Deadline: **{due}**.",
        "grading_h": "How it is graded",
        "grading": "Each kata is worth {points} points, split by test tier: {weights}. Your code runs in "
                   "a separate process with a time limit of {timeout:g} s per kata, so an infinite loop "
                   "only costs you that kata.",
    },
    "zh": {
        "intro": "这个文件夹就是你的练习题集。每道题有自己的文件夹，里面有题目说明、你要完成的文件和几个公开样例测试。"
                 "`handout.html` 是所有题目的可打印版本（用浏览器打开后打印）。",
        "table": ("题目", "标题", "难度", "建议用时（分钟）", "提交文件"),
        "write_h": "编写答案",
        "write": "在题目文件夹里完成 `{file}`。不要修改函数名、类名和签名中的参数名：评测按名字调用它们。"
                 "只用 PyTorch（题目说明要求时用 NumPy）；禁止使用融合注意力内核"
                 "（`scaled_dot_product_attention`、`flex_attention`、`nn.MultiheadAttention`），代码运行时会被检测到。",
        "guided": "你的文件用 `# BEGIN SOLUTION` / `# END SOLUTION` 标出了要写代码的位置。",
        "scratch": "你的文件里有签名和文档字符串，函数体需要你来写。",
        "check_h": "自测",
        "check": "每个题目文件夹里都有公开样例测试，需要 Python、PyTorch、NumPy 和 pytest；在本文件夹中运行：",
        "every": "所有题目", "one": "单个题目",
        "check_note": "通过样例不等于满分：隐藏测试还覆盖边界情况（整行被遮掩、float32、很大的 logits、梯度等）。"
                      "请仔细阅读题目说明和通用约定。",
        "hand_h": "提交",
        "hand": "提交一个以你的名字（学号）命名的文件夹，里面每道题恰好一个文件，文件名如下，不要有子文件夹：",
        "hand_note": "不要重命名文件，除标准库、PyTorch 和 NumPy 外不要导入其他东西。缺少的文件该题记 0 分；"
                     "截止时间之后修改的文件会被标记为迟交。",
        "due": "截止时间：**{due}**。",
        "grading_h": "评分方式",
        "grading": "每道题 {points} 分，按测试层级分配：{weights}。你的代码在单独的进程里运行，每道题限时 {timeout:g} 秒，"
                   "所以死循环只影响那一道题。",
    },
}
TIER_NAMES = {"en": {"core": "core", "edge": "edge cases", "efficient": "efficiency"},
              "zh": {"core": "核心", "edge": "边界情况", "efficient": "效率"}}


def _section(m: Manifest, lang: str) -> str:
    t = TEXT[lang]
    g = m.grading
    # Only the tiers these katas have tests in: a kata's points are split over its own tiers.
    present = {tier for k in m.katas for tier in k.tests} or set(g.tier_weights)
    used = {tier: w for tier, w in g.tier_weights.items() if w > 0 and tier in present}
    total_w = sum(used.values()) or 1.0
    weights = ", ".join(f"{TIER_NAMES[lang].get(tier, tier)} {100 * w / total_w:.0f}%" for tier, w in used.items())
    points = {m.points(k) for k in m.kata_ids}
    lines = [t["intro"], "", "| " + " | ".join(t["table"]) + " |", "|---|---|---|---|---|"]
    for k in m.katas:
        lines.append(f"| `{k.id}` | {k.title[lang]} | {k.difficulty} | {k.minutes} | `{k.id}/{k.solution_file}` |")
    level = m.options.get("level", "scratch")
    lines += ["", f"### {t['write_h']}", "", t["write"].format(file="<file>.py"), "", t[level], "",
              f"### {t['check_h']}", "", t["check"], "", "```sh"]
    with_samples = [k.id for k in m.katas if k.public_samples]
    lines.append(f"python -m pytest -q{' ' * 8}# {t['every']}")
    if with_samples:
        lines.append(f"python -m pytest -q {with_samples[0]}{' ' * max(1, 7 - len(with_samples[0]))}# {t['one']}")
    lines += ["```", "", t["check_note"], "", f"### {t['hand_h']}", "", t["hand"], "", "```"]
    lines.append("<your-id>/")
    lines += [f"    {k.solution_file}" for k in m.katas]
    lines += ["```", "", t["hand_note"]]
    if g.due:
        lines += ["", t["due"].format(due=g.due)]
    lines += ["", f"### {t['grading_h']}", "",
              t["grading"].format(points="/".join(f"{p:g}" for p in sorted(points)), weights=weights,
                                  timeout=g.timeout)]
    return "\n".join(lines)


def student_readme(m: Manifest) -> str:
    lang = m.options.get("lang", "both")
    langs = ["en", "zh"] if lang == "both" else [lang]
    parts = [f"# {m.title}"]
    for lng in langs:
        parts.append(("## English" if lng == "en" else "## 中文") if len(langs) > 1 else "")
        parts.append(_section(m, lng))
    return "\n\n".join(p for p in parts if p) + "\n"
