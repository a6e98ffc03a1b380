"""The mock interview's own sentences, in English and Chinese. `t(key, lang, **params)`."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    # sessions
    "not_in_session": ("{kata!r} is not a problem of mock session {id} (its problems: {katas})",
                       "{kata!r} 不是模拟面试 {id} 的题目（本场题目：{katas}）"),
    "no_such_session": ("no mock session with id {id!r}", "没有 id 为 {id!r} 的模拟面试"),
    "see_history": ("`kata mock history` lists your sessions", "`kata mock history` 会列出你的所有场次"),
    "ambiguous_session": ("{id!r} matches several sessions: {ids}", "{id!r} 匹配到多个场次：{ids}"),
    "no_open_session": ("no mock interview is running", "当前没有进行中的模拟面试"),
    "start_one": ("start one with `kata mock start --minutes 30`", "用 `kata mock start --minutes 30` 开始一场"),
    "folder_gone": ("the folder of mock session {id} is gone ({folder})",
                    "模拟面试 {id} 的文件夹不存在了（{folder}）"),
    "abandon_hint": ("end it with `kata mock abandon --session {id}`",
                     "用 `kata mock abandon --session {id}` 结束它"),
    "bad_minutes": ("--minutes must be between {lo} and {hi}", "--minutes 必须在 {lo} 到 {hi} 之间"),
    "already_open": ("mock session {id} is not finished yet (state: {state})",
                     "模拟面试 {id} 还没有结束（状态：{state}）"),
    "already_open_hint": ("continue it with `kata mock resume`, or end it with `kata mock submit` "
                          "or `kata mock abandon`",
                          "用 `kata mock resume` 继续，或用 `kata mock submit` / `kata mock abandon` 结束它"),
    "dir_not_empty": ("{folder} exists and is not empty", "{folder} 已存在且不为空"),
    "dir_not_empty_hint": ("pass a new folder with --dir, or leave --dir out",
                           "用 --dir 指定一个新文件夹，或者不传 --dir"),
    "file_missing": ("your file {file} is missing", "你的文件 {file} 不见了"),
    "file_missing_hint": ("restore it (the skeleton is shown by `kata show`) and save again",
                          "请恢复该文件后再保存"),
    "note_missing": ("The file was missing at submission.", "提交时文件不存在。"),
    "note_late_edit": ("The file was saved after the deadline.", "文件在截止时间之后被修改过。"),
    "note_used_checkpoint": ("Graded the version of your last check ({when}).",
                             "评分使用了你最后一次检查时的版本（{when}）。"),
    "note_used_skeleton": ("No check before the deadline: graded the skeleton.",
                           "截止前没有检查过：按骨架代码评分。"),
    "readme_title": ("Mock interview", "模拟面试"),
    "readme_intro": ("You have {minutes} minutes (until {deadline}). No reference solutions; hints cost "
                     "points. Edit the files below; saving re-checks them while the screen is open.",
                     "你有 {minutes} 分钟（截止 {deadline}）。不能查看参考答案；提示会扣分。"
                     "编辑下面的文件；界面开着时，保存即会自动重新检查。"),
    "readme_statement": ("statement", "题面"),
    "readme_commands": ("`kata mock status` shows the time left, `kata mock resume` reopens the screen, "
                        "`kata mock check` grades without it, `kata mock submit` ends early.",
                        "`kata mock status` 查看剩余时间，`kata mock resume` 重新打开界面，"
                        "`kata mock check` 不开界面直接检查，`kata mock submit` 提前交卷。"),
    "not_running": ("mock session {id} is not running any more ({state})",
                    "模拟面试 {id} 已经不在进行中（{state}）"),
    "no_reference": ("the reference of {kata} is not available during a mock interview "
                     "(session {id}, {left} left)",
                     "模拟面试进行中，不能查看 {kata} 的参考答案（场次 {id}，剩余 {left}）"),
    "no_reference_followups": ("the reference of {kata} stays hidden until mock session {id} is finished "
                               "(its follow-up questions are waiting)",
                               "模拟面试 {id} 结束前（追问还在等待回答），{kata} 的参考答案不可查看"),
    "no_reference_hint": ("finish the interview first: `kata mock submit` (or `kata mock abandon`)",
                          "请先结束面试：`kata mock submit`（或 `kata mock abandon`）"),
    # follow-up answers
    "ans_empty": ("no answer given", "没有给出答案"),
    "ans_not_number": ("{raw!r} is not a number (write e.g. 536870912, 5.4e8, 512*1024*1024 or 537M)",
                       "{raw!r} 不是数字（可以写 536870912、5.4e8、512*1024*1024 或 537M）"),
    "ans_bad_label": ("{token!r} is not one of the labels a..{last} (or 1..n)",
                      "{token!r} 不是 a..{last}（或 1..n）中的标号"),
    "ans_not_permutation": ("give all {n} labels once each, e.g. `c a b ...` (labels a..{last})",
                            "请把 {n} 个标号各写一次，例如 `c a b ...`（标号 a..{last}）"),
    "ans_bad_rating": ("rate yourself 0 (missed it), 1 (partly) or 2 (got it)",
                       "请给自己打分：0（没答到）、1（部分答到）或 2（答到了）"),
    "fb_unanswered": ("Not answered.", "未作答。"),
    "fb_correct": ("Correct.", "正确。"),
    "fb_close": ("Close ({pct} off), but outside the tolerance: check the arithmetic.",
                 "接近（相差 {pct}），但超出了容差：检查一下计算。"),
    "fb_factor2": ("Off by exactly a factor of 2: multiply-adds vs FLOPs, or a forgotten factor of 2?",
                   "恰好差了 2 倍：是把乘加次数和 FLOPs 搞混了，还是漏了一个 2？"),
    "fb_units": ("Off by a power of 1000 or 1024: check the unit.", "差了 1000 或 1024 的整数次幂：检查单位。"),
    "fb_wrong": ("Not right.", "不正确。"),
    "fb_one_swap": ("Almost: exactly two steps are swapped.", "差一点：恰好有两个步骤顺序颠倒。"),
    "fb_unrated": ("Not self-rated, so it scores 0: rate open answers 0, 1 or 2.",
                   "没有自评，按 0 分计：开放题请自评 0、1 或 2 分。"),
    "fb_rated": ("Self-rated {n}/2.", "自评 {n}/2 分。"),
}


def t(key: str, lang: str, **params: object) -> str:
    en, zh = MESSAGES[key]
    return (zh if lang == "zh" else en).format(**params)


def both(key: str, **params: object) -> dict[str, str]:
    """A message in both languages (stored in session files, rendered later in either)."""
    en, zh = MESSAGES[key]
    return {"en": en.format(**params), "zh": zh.format(**params)}
