"""The mock interview's sentences (catalogue part; `checker.messages.msg` looks them up)."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    "mock.not_in_session": (
        "{kata!r} is not a problem of mock session {id} (its problems: {katas})",
        "{kata!r} 不是模拟面试 {id} 的题目（本场题目：{katas}）",
    ),
    "mock.no_such_session": ("no mock session with id {id!r}", "没有 id 为 {id!r} 的模拟面试"),
    "mock.see_history": (
        "`kata mock history` lists your sessions",
        "`kata mock history` 会列出你的所有场次",
    ),
    "mock.ambiguous_session": (
        "{id!r} matches several sessions: {ids}",
        "{id!r} 匹配到多个场次：{ids}",
    ),
    "mock.no_open_session": ("no mock interview is running", "当前没有进行中的模拟面试"),
    "mock.start_one": (
        "start one with `kata mock start --minutes 30`",
        "用 `kata mock start --minutes 30` 开始一场",
    ),
    "mock.folder_gone": (
        "the folder of mock session {id} is gone ({folder})",
        "模拟面试 {id} 的文件夹不存在了（{folder}）",
    ),
    "mock.abandon_hint": (
        "end it with `kata mock abandon --session {id}`",
        "用 `kata mock abandon --session {id}` 结束它",
    ),
    "mock.bad_minutes": (
        "--minutes must be between {lo} and {hi}",
        "--minutes 必须在 {lo} 到 {hi} 之间",
    ),
    "mock.already_open": (
        "mock session {id} is not finished yet (state: {state})",
        "模拟面试 {id} 还没有结束（状态：{state}）",
    ),
    "mock.already_open_hint": (
        "continue it with `kata mock resume`, or end it with `kata mock submit` or `kata mock abandon`",
        "用 `kata mock resume` 继续，或用 `kata mock submit` / `kata mock abandon` 结束它",
    ),
    "mock.dir_not_empty": ("{folder} exists and is not empty", "{folder} 已存在且不为空"),
    "mock.dir_not_empty_hint": (
        "pass a new folder with --dir, or leave --dir out",
        "用 --dir 指定一个新文件夹，或者不传 --dir",
    ),
    "mock.file_missing": ("your file {file} is missing", "你的文件 {file} 不见了"),
    "mock.file_missing_hint": (
        "restore it (the skeleton is shown by `kata show`) and save again",
        "请恢复该文件后再保存",
    ),
    "mock.note_missing": ("The file was missing at submission.", "提交时文件不存在。"),
    "mock.note_late_edit": (
        "The file was saved after the deadline.",
        "文件在截止时间之后被修改过。",
    ),
    "mock.note_used_checkpoint": (
        "Graded the version of your last check ({when}).",
        "评分使用了你最后一次检查时的版本（{when}）。",
    ),
    "mock.note_used_skeleton": (
        "No check before the deadline: graded the skeleton.",
        "截止前没有检查过：按骨架代码评分。",
    ),
    "mock.readme_title": ("Mock interview", "模拟面试"),
    "mock.readme_intro": (
        "You have {minutes} minutes (until {deadline}). No reference solutions; hints cost points. Edit the files below; saving re-checks them while the screen is open.",
        "你有 {minutes} 分钟（截止 {deadline}）。不能查看参考答案；提示会扣分。编辑下面的文件；界面开着时，保存即会自动重新检查。",
    ),
    "mock.readme_statement": ("statement", "题面"),
    "mock.readme_commands": (
        "`kata mock status` shows the time left, `kata mock resume` reopens the screen, `kata mock check` grades without it, `kata mock submit` ends early.",
        "`kata mock status` 查看剩余时间，`kata mock resume` 重新打开界面，`kata mock check` 不开界面直接检查，`kata mock submit` 提前交卷。",
    ),
    "mock.not_running": (
        "mock session {id} is not running any more ({state})",
        "模拟面试 {id} 已经不在进行中（{state}）",
    ),
    "mock.no_reference": (
        "the reference of {kata} is not available during a mock interview (session {id}, {left} left)",
        "模拟面试进行中，不能查看 {kata} 的参考答案（场次 {id}，剩余 {left}）",
    ),
    "mock.no_reference_followups": (
        "the reference of {kata} stays hidden until mock session {id} is finished (its follow-up questions are waiting)",
        "模拟面试 {id} 结束前（追问还在等待回答），{kata} 的参考答案不可查看",
    ),
    "mock.no_reference_hint": (
        "finish the interview first: `kata mock submit` (or `kata mock abandon`)",
        "请先结束面试：`kata mock submit`（或 `kata mock abandon`）",
    ),
    "mock.ans_empty": ("no answer given", "没有给出答案"),
    "mock.ans_not_number": (
        "{raw!r} is not a number (write e.g. 536870912, 5.4e8, 512*1024*1024 or 537M)",
        "{raw!r} 不是数字（可以写 536870912、5.4e8、512*1024*1024 或 537M）",
    ),
    "mock.ans_bad_label": (
        "{token!r} is not one of the labels a..{last} (or 1..n)",
        "{token!r} 不是 a..{last}（或 1..n）中的标号",
    ),
    "mock.ans_not_permutation": (
        "give all {n} labels once each, e.g. `c a b ...` (labels a..{last})",
        "请把 {n} 个标号各写一次，例如 `c a b ...`（标号 a..{last}）",
    ),
    "mock.ans_bad_rating": (
        "rate yourself 0 (missed it), 1 (partly) or 2 (got it)",
        "请给自己打分：0（没答到）、1（部分答到）或 2（答到了）",
    ),
    "mock.fb_unanswered": ("Not answered.", "未作答。"),
    "mock.fb_correct": ("Correct.", "正确。"),
    "mock.fb_close": (
        "Close ({pct} off), but outside the tolerance: check the arithmetic.",
        "接近（相差 {pct}），但超出了容差：检查一下计算。",
    ),
    "mock.fb_factor2": (
        "Off by exactly a factor of 2: multiply-adds vs FLOPs, or a forgotten factor of 2?",
        "恰好差了 2 倍：是把乘加次数和 FLOPs 搞混了，还是漏了一个 2？",
    ),
    "mock.fb_units": (
        "Off by a power of 1000 or 1024: check the unit.",
        "差了 1000 或 1024 的整数次幂：检查单位。",
    ),
    "mock.fb_wrong": ("Not right.", "不正确。"),
    "mock.fb_one_swap": (
        "Almost: exactly two steps are swapped.",
        "差一点：恰好有两个步骤顺序颠倒。",
    ),
    "mock.fb_unrated": (
        "Not self-rated, so it scores 0: rate open answers 0, 1 or 2.",
        "没有自评，按 0 分计：开放题请自评 0、1 或 2 分。",
    ),
    "mock.fb_rated": ("Self-rated {n}/2.", "自评 {n}/2 分。"),
    "mock.screen.checking": ("Checking {kata}…", "正在检查 {kata}…"),
    "mock.screen.queued": (
        "{kata} will be checked after the current check.",
        "当前检查结束后会检查 {kata}。",
    ),
    "mock.screen.unchanged": (
        "{kata}: no change since the last check.",
        "{kata}：自上次检查以来没有改动。",
    ),
    "mock.screen.hint_confirm": (
        "A hint costs {cost} points. Press h again to see it.",
        "每个提示扣 {cost} 分。再按一次 h 查看。",
    ),
    "mock.screen.no_more_hints": ("No more hints for {kata}.", "{kata} 没有更多提示了。"),
    "mock.screen.hint": (
        "Hint for {kata} ({n} used, -{cost} points each)",
        "{kata} 的提示（已用 {n} 个，每个扣 {cost} 分）",
    ),
    "mock.screen.submit_confirm": (
        "Press s again to submit now ({left} left). Any other key cancels.",
        "再按一次 s 立即交卷（还剩 {left}）。按其他键取消。",
    ),
    "mock.screen.help": (
        "c check · v read the statement · h hint (costs points) · n/p or 1-3 choose a problem · s submit · q leave (the clock keeps running; `kata mock resume`)",
        "c 检查 · v 阅读题面 · h 提示（扣分）· n/p 或 1-3 选择题目 · s 交卷 · q 离开（计时继续；用 `kata mock resume` 回来）",
    ),
    "mock.screen.grader_failed": ("The check could not run: {error}", "检查无法运行：{error}"),
    "mock.screen.file_missing": (
        "{file} is missing: restore it and save.",
        "{file} 不见了：请恢复后保存。",
    ),
    "mock.cli.title": ("attnkata mock interview", "attnkata 模拟面试"),
    "mock.cli.time_left": ("Time left", "剩余时间"),
    "mock.cli.deadline": ("deadline", "截止"),
    "mock.cli.problem": ("problem", "题目"),
    "mock.cli.diff": ("level", "难度"),
    "mock.cli.file": ("your file", "你的文件"),
    "mock.cli.status": ("last check", "上次检查"),
    "mock.cli.tests": ("tests", "测试"),
    "mock.cli.hints": ("hints", "提示"),
    "mock.cli.first_pass": ("first pass", "首次通过"),
    "mock.cli.unchecked": ("not checked", "未检查"),
    "mock.cli.folder": ("Folder", "文件夹"),
    "mock.cli.keys": (
        "[c] check  [v] statement  [h] hint (-10)  [n]/[p] problem  [s] submit  [q] leave  [?] help",
        "[c] 检查  [v] 题面  [h] 提示（-10）  [n]/[p] 切换题目  [s] 交卷  [q] 离开  [?] 帮助",
    ),
    "mock.cli.back": ("Press Enter to return to the countdown", "按回车返回倒计时界面"),
    "mock.cli.watching": (
        "Saving a file re-checks it. Leaving with q keeps the clock running.",
        "保存文件会自动重新检查。按 q 离开后计时继续。",
    ),
    "mock.cli.statement": ("statement", "题面"),
    "mock.cli.why": ("why", "选题原因"),
    "mock.cli.left": (
        "You left the interview; the clock keeps running ({left} left).",
        "你离开了面试界面；计时仍在继续（剩余 {left}）。",
    ),
    "mock.cli.left_hint": (
        "Come back with `kata mock resume`; `kata mock status` shows the time left.",
        "用 `kata mock resume` 回来；`kata mock status` 查看剩余时间。",
    ),
    "mock.cli.time_up": (
        "Time is up: your work at the deadline was submitted.",
        "时间到：已提交你在截止时的代码。",
    ),
    "mock.cli.submitted": ("Submitted.", "已交卷。"),
    "mock.cli.elsewhere": (
        "The session was submitted from another terminal.",
        "本场已在另一个终端交卷。",
    ),
    "mock.cli.grading": ("Grading {kata}…", "正在评分 {kata}…"),
    "mock.cli.started": (
        "Mock interview {id} started: {minutes} minutes, until {deadline}.",
        "模拟面试 {id} 开始：{minutes} 分钟，截止 {deadline}。",
    ),
    "mock.cli.next_steps": (
        "Edit the files in {folder}. Check with `kata mock check`, see the time with `kata mock status`, finish with `kata mock submit`.",
        "在 {folder} 中编辑文件。用 `kata mock check` 检查，`kata mock status` 查看时间，`kata mock submit` 交卷。",
    ),
    "mock.cli.fu_intro": (
        "Follow-up questions ({n}). Type your answer and press Enter (empty line: skip for now).",
        "追问（共 {n} 题）。输入答案后按回车（空行：稍后再答）。",
    ),
    "mock.cli.fu_choice": ("Answer with a letter", "输入字母作答"),
    "mock.cli.fu_order": (
        "Give all letters in the right order, e.g. `c a b`",
        "按正确顺序写出所有字母，例如 `c a b`",
    ),
    "mock.cli.fu_numeric": (
        "A number (5.4e8, 512*1024 and 537M work too)",
        "输入一个数（也可写 5.4e8、512*1024、537M）",
    ),
    "mock.cli.fu_open": ("Your answer (one line)", "你的回答（一行）"),
    "mock.cli.fu_model": ("Model answer", "参考答案"),
    "mock.cli.fu_rate": (
        "Rate yourself: 0 missed it, 1 partly, 2 got it",
        "给自己打分：0 没答到，1 部分答到，2 答到了",
    ),
    "mock.cli.fu_expected": ("Expected", "参考答案"),
    "mock.cli.fu_later": (
        "Stopped; answer the rest later with `kata mock resume`.",
        "已暂停；稍后用 `kata mock resume` 回答剩下的问题。",
    ),
    "mock.cli.fu_pending": (
        "{n} follow-up question(s) are waiting. Answer them with `kata mock resume` in a terminal, or `kata mock answer --answers FILE` (question ids below).",
        "还有 {n} 道追问等待回答。在终端中用 `kata mock resume` 回答，或用 `kata mock answer --answers FILE`（问题 id 见下）。",
    ),
    "mock.cli.saved": (
        "Scorecard saved: {md} (and scorecard.json).",
        "评分卡已保存：{md}（以及 scorecard.json）。",
    ),
    "mock.cli.no_sessions": (
        "No mock interviews yet. Start one with `kata mock start --minutes 30`.",
        "还没有模拟面试记录。用 `kata mock start --minutes 30` 开始一场。",
    ),
    "mock.cli.trend": ("Trend", "趋势"),
    "mock.cli.mistakes": ("mistakes", "错误"),
    "mock.cli.fixed": ("fixed before the end", "结束前已改正"),
    "mock.cli.too_long": (
        "warning: {names} suggest {total} minutes in all, more than this {minutes}-minute interview",
        "注意：{names} 的建议用时合计 {total} 分钟，超过了这场 {minutes} 分钟的面试",
    ),
    "mock.cli.result": ("result", "结果"),
    "mock.cli.score": ("score", "得分"),
    "mock.cli.not_attempted": ("not attempted", "未作答"),
    "mock.cli.pending": ("waiting for your answer", "等待回答"),
    "mock.cli.easy": ("easy", "简单"),
    "mock.cli.medium": ("medium", "中等"),
    "mock.cli.hard": ("hard", "困难"),
    "mock.cli.about": ("~{n} min", "约 {n} 分钟"),
    "mock.cli.verdict": ("verdict", "结论"),
    "mock.cli.rule": ("rule", "规则"),
    "mock.cli.total": ("total", "总分"),
    "mock.cli.coding": ("coding", "编码"),
    "mock.cli.followups": ("follow-ups", "追问"),
    "mock.cli.pending_verdict": ("pending follow-ups", "待回答追问"),
    "mock.cli.hint_cost": (
        "(this hint costs {cost} points; {n} used on {kata})",
        "（该提示扣 {cost} 分；{kata} 已用 {n} 个）",
    ),
    "mock.cli.no_more_hints": ("No more hints for {kata}.", "{kata} 没有更多提示了。"),
    "mock.cli.state": ("state", "状态"),
    "mock.cli.abandoned": ("Session {id} abandoned.", "已放弃场次 {id}。"),
    "mock.cli.abandon_confirm": (
        "Abandon mock session {id}? Nothing is graded.",
        "放弃模拟面试 {id}？不会评分。",
    ),
    "scorecard.title": ("Mock interview scorecard", "模拟面试评分卡"),
    "scorecard.session": ("Session", "场次"),
    "scorecard.date": ("Date", "日期"),
    "scorecard.time": ("Time used", "用时"),
    "scorecard.of": ("of", "/"),
    "scorecard.min": ("min", "分钟"),
    "scorecard.manual": ("submitted by you", "你主动交卷"),
    "scorecard.deadline": ("submitted at the deadline", "到时自动交卷"),
    "scorecard.verdict": ("Verdict", "结论"),
    "scorecard.pending": (
        "pending: answer the follow-up questions (`kata mock resume` or `kata mock answer --answers FILE`)",
        "待定：请先回答追问（`kata mock resume` 或 `kata mock answer --answers FILE`）",
    ),
    "scorecard.rule": ("Rule applied", "适用规则"),
    "scorecard.total": ("total", "总分"),
    "scorecard.coding": ("coding", "编码"),
    "scorecard.followups": ("follow-ups", "追问"),
    "scorecard.problems": ("Problems", "题目"),
    "scorecard.problem": ("Problem", "题目"),
    "scorecard.status": ("Status", "状态"),
    "scorecard.ttp": ("Time to first pass", "首次通过用时"),
    "scorecard.hints": ("Hints", "提示"),
    "scorecard.score": ("Score", "得分"),
    "scorecard.mistakes": ("Diagnosed mistakes", "诊断出的错误"),
    "scorecard.none": ("none", "无"),
    "scorecard.notes": ("Notes", "备注"),
    "scorecard.fu_title": ("Follow-up questions", "追问"),
    "scorecard.question": ("Question", "问题"),
    "scorecard.answer": ("Your answer", "你的回答"),
    "scorecard.expected": ("Expected", "参考答案"),
    "scorecard.points": ("Points", "得分"),
    "scorecard.model": ("Model answer", "参考答案"),
    "scorecard.scale": ("Verdict scale", "结论标准"),
    "scorecard.fixed": ("fixed before the end", "结束前已改正"),
    "scorecard.scoring": ("How the score is computed", "计分方式"),
    "scorecard.not_attempted": ("not attempted", "未作答"),
    "scorecard.pts": ("points", "分"),
    "scorecard.no_questions": (
        "No follow-up questions (no problem was attempted).",
        "没有追问（没有作答任何题目）。",
    ),
    "scorecard.failed": ("failing tests", "未通过的测试"),
    "scorecard.tests": ("tests", "测试"),
}

# The scorecard's scoring rule and verdict scale (checker/mock/scorecard.py fills in its constants),
# the verdicts' names, and the rule that produced a verdict, with the session's numbers.
MESSAGES.update(
    {
        "scorecard.scale.strong_hire": (
            "strong hire: every problem passes its required tiers, total >= {strong_total}, "
            "follow-ups >= {strong_followups}% and at most {strong_max_hints} hint",
            "强烈推荐录用：每道题都通过必需层级，总分 >= {strong_total}，追问 >= {strong_followups}%，"
            "提示不超过 {strong_max_hints} 次",
        ),
        "scorecard.scale.hire": (
            "hire: every problem passes its required tiers and total >= {hire_total}",
            "推荐录用：每道题都通过必需层级，且总分 >= {hire_total}",
        ),
        "scorecard.scale.lean_no": (
            "lean no: total >= {lean_total}, or at least one problem passes",
            "倾向不录用：总分 >= {lean_total}，或至少一道题通过",
        ),
        "scorecard.scale.no_hire": ("no hire: otherwise", "不录用：其他情况"),
        "scorecard.scoring.problem": (
            "Per problem: tests passed per tier, weighted core 60 / edge 30 / efficient 10 over the tiers "
            "the kata has, minus {hint_cost} points per hint (not below 0); an untouched skeleton scores 0.",
            "每道题：按层级统计通过的测试，权重 core 60 / edge 30 / efficient 10（只算该题有的层级），"
            "每用一次提示扣 {hint_cost} 分（最低 0 分）；没改动的骨架代码得 0 分。",
        ),
        "scorecard.scoring.total": (
            "Coding = mean over problems. Total = {coding_share:.0%} coding + {followup_share:.0%} "
            "follow-ups (coding alone when there were no follow-ups).",
            "编码分 = 各题平均。总分 = {coding_share:.0%} 编码分 + {followup_share:.0%} 追问分"
            "（没有追问时只算编码分）。",
        ),
        "scorecard.scoring.followups": (
            "Follow-ups: 2 points each; numeric within tolerance 2 (within 10%: 1), choice 2, order 2 "
            "(two items swapped: 1), open questions self-rated 0-2.",
            "追问：每题 2 分；数值题在容差内得 2 分（误差 10% 内得 1 分），选择题 2 分，排序题 2 分"
            "（恰好两项颠倒得 1 分），开放题自评 0-2 分。",
        ),
        "scorecard.verdict.strong_hire": ("strong hire", "强烈推荐录用"),
        "scorecard.verdict.hire": ("hire", "推荐录用"),
        "scorecard.verdict.lean_no": ("lean no", "倾向不录用"),
        "scorecard.verdict.no_hire": ("no hire", "不录用"),
        "scorecard.rule.no_followups": ("no follow-ups", "无追问"),
        "scorecard.rule.followups": ("follow-ups {pct:.0f}%", "追问 {pct:.0f}%"),
        "scorecard.rule.strong_hire": (
            "strong hire: all {n} problem(s) pass, total {total:.0f} >= {strong_total}, "
            "{fu}, {hints} hint(s) <= {strong_max_hints}",
            "强烈推荐录用：{n} 道题全部通过，总分 {total:.0f} >= {strong_total}，{fu}，"
            "提示 {hints} 次 <= {strong_max_hints}",
        ),
        "scorecard.rule.hire": (
            "hire: all {n} problem(s) pass and total {total:.0f} >= {hire_total} (strong hire also "
            "needs total >= {strong_total}, follow-ups >= {strong_followups}%, <= {strong_max_hints} hint; "
            "here: {fu}, {hints} hint(s))",
            "推荐录用：{n} 道题全部通过且总分 {total:.0f} >= {hire_total}（强烈推荐还需总分 >= "
            "{strong_total}、追问 >= {strong_followups}%、提示不超过 {strong_max_hints} 次；本场：{fu}，"
            "提示 {hints} 次）",
        ),
        "scorecard.rule.why": ("{n_pass} of {n} problem(s) pass", "{n} 道题中通过 {n_pass} 道"),
        "scorecard.rule.why_not_hire": (
            "{n_pass} of {n} problem(s) pass, so not hire",
            "{n} 道题中通过 {n_pass} 道，所以不是推荐录用",
        ),
        "scorecard.rule.lean_no": (
            "lean no: {why}; total {total:.0f} (>= {lean_total} or a problem passes; "
            "hire needs every problem passing and total >= {hire_total})",
            "倾向不录用：{why}；总分 {total:.0f}（>= {lean_total} 或至少一道题通过；"
            "推荐录用需所有题通过且总分 >= {hire_total}）",
        ),
        "scorecard.rule.no_hire": (
            "no hire: no problem passes and total {total:.0f} < {lean_total}",
            "不录用：没有题目通过，且总分 {total:.0f} < {lean_total}",
        ),
    }
)

# Why a problem was picked (checker/mock/picker.py), and a hint from the mistake catalogue.
MESSAGES.update(
    {
        "mock.chosen_by_you": ("chosen by you", "你指定的题目"),
        "mock.pick.new": ("not done yet", "还没做过"),
        "mock.pick.failing": ("attempted {n}x, not passed yet", "尝试过 {n} 次，尚未通过"),
        "mock.pick.passed": ("passed before", "以前通过过"),
        "mock.pick.mistakes": (
            "; tests mistakes you have made: {mistakes}",
            "；考察你犯过的错误：{mistakes}",
        ),
        "mock.pick.hints": ("; you needed {n} hints", "；你用过 {n} 次提示"),
    }
)
