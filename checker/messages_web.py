"""The texts of `kata web`'s pages and answers (catalogue part "web."; `checker.messages.msg`
looks them up). Labels the terminal already has (html., render., mock.cli., scorecard.) are
reused from their own parts."""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    # the server and its guard
    "web.serving": ("kata web is serving at {url}", "kata web 已启动：{url}"),
    "web.serving_instructor": ("instructor page: {url}", "教师页面：{url}"),
    "web.stop_hint": (
        "Open the URL above (its token lets you in). Ctrl-C stops the server and every check.",
        "打开上面的网址（其中的 token 用于登录）。按 Ctrl-C 停止服务器和所有评测。",
    ),
    "web.stopped": ("kata web stopped", "kata web 已停止"),
    "web.no_token": (
        "This page needs the token: open the URL that `kata web` printed.",
        "需要 token 才能访问：请打开 `kata web` 打印的网址。",
    ),
    "web.bad_host": (
        "Refused: this server answers only to 127.0.0.1 or localhost.",
        "已拒绝：此服务器只接受 127.0.0.1 或 localhost 的访问。",
    ),
    "web.cross_origin": (
        "Refused: a change must come from this server's own pages (cross-origin request).",
        "已拒绝：修改请求必须来自本服务器自己的页面（跨源请求）。",
    ),
    "web.too_large": (
        "Refused: the request is larger than {limit} MiB.",
        "已拒绝：请求超过 {limit} MiB。",
    ),
    "web.bad_json": (
        "The request is not the JSON the page sends.",
        "请求不是页面发送的 JSON 格式。",
    ),
    "web.internal": (
        "Something went wrong in attnkata ({error}); the server keeps running. Please report it.",
        "attnkata 内部出错（{error}）；服务器仍在运行。请报告这个问题。",
    ),
    "web.error_title": ("Something is not right", "出了点问题"),
    "web.back_to_list": ("Back to the katas", "返回题目列表"),
    "web.no_instructor": (
        "No problem set given: start `kata web --set SETDIR --grades DIR`.",
        "没有指定题目集：请用 `kata web --set SETDIR --grades DIR` 启动。",
    ),
    # navigation and the list
    "web.nav_katas": ("Katas", "题目"),
    "web.nav_mock": ("Mock interview", "模拟面试"),
    "web.nav_instructor": ("Instructor", "教师"),
    "web.next_title": ("Practise next", "下一题推荐"),
    "web.col_kata": ("kata", "题目"),
    "web.col_title": ("title", "标题"),
    "web.col_difficulty": ("level", "难度"),
    "web.col_minutes": ("minutes", "分钟"),
    "web.col_status": ("status", "状态"),
    "web.col_due": ("review", "复习"),
    "web.col_state": ("state", "状态"),
    "web.col_score": ("score", "得分"),
    "web.col_verdict": ("verdict", "结论"),
    "web.due_now": ("due", "该复习了"),
    "web.about_minutes": ("about {n} min", "约 {n} 分钟"),
    # a kata's page
    "web.check_button": ("Check", "检查"),
    "web.vim_keys": ("vim keys", "vim 键位"),
    "web.hint_button": ("Hint", "提示"),
    "web.solution_button": ("Solution", "参考答案"),
    "web.history_button": ("History", "历史记录"),
    "web.not_started": (
        "not started yet: your first edit creates this file",
        "尚未开始：第一次编辑会创建这个文件",
    ),
    "web.saving": ("saving…", "保存中…"),
    "web.saved": ("saved", "已保存"),
    "web.checking": ("checking…", "检查中…"),
    "web.superseded": (
        "A newer check of this file replaced this one.",
        "这个文件有更新的检查，本次检查已被取代。",
    ),
    "web.changed_on_disk": (
        "reloaded: the file was saved elsewhere",
        "已重新载入：文件在别处被保存",
    ),
    "web.conflict": (
        "The file was saved elsewhere while you were typing here. Your next save keeps that version as a backup beside the file.",
        "你在这里输入时，文件在别处被保存了。下一次保存会把那个版本作为备份保留在文件旁边。",
    ),
    "web.backup_kept": (
        "The file had changed elsewhere; that version is kept as {path}.",
        "文件曾在别处被修改；那个版本已保存为 {path}。",
    ),
    "web.not_utf8": (
        "{path} is not UTF-8 text: the page does not overwrite it.",
        "{path} 不是 UTF-8 文本：页面不会覆盖它。",
    ),
    "web.not_utf8_readonly": (
        "This file is not UTF-8 text, so the page shows it read-only and never overwrites it. Save it as UTF-8 in your editor.",
        "这个文件不是 UTF-8 文本，所以页面只读显示，且不会覆盖它。请在你的编辑器里把它另存为 UTF-8。",
    ),
    "web.file_too_large": (
        "Not saved: {size} bytes is over the {limit}-byte limit of the checker. Your file is unchanged; the text stays in the editor.",
        "未保存：{size} 字节超过检查器 {limit} 字节的上限。文件没有改动；文字仍保留在编辑器里。",
    ),
    "web.no_file": (
        "There is no file {path} yet: type in the editor first.",
        "还没有文件 {path}：请先在编辑器里输入。",
    ),
    "web.grader_failed": ("The check failed: {error}", "检查失败：{error}"),
    "web.grader_died": (
        "The grading process ended; it restarts with the next check ({log}).",
        "评测进程已退出；下一次检查时会重新启动（{log}）。",
    ),
    "web.solution_confirm": (
        "You have not passed this kata yet. Show the reference solution?",
        "你还没有通过这道题。要查看参考答案吗？",
    ),
    "web.tests_passed": ("{passed}/{total} tests passed", "{passed}/{total} 个测试通过"),
    "web.line_n": ("line {n}", "第 {n} 行"),
    "web.failing_tests": ("{n} failing test(s)", "{n} 个未通过的测试"),
    "web.explained_above": ("explained by the diagnosis above", "原因见上面的诊断"),
    # mock interviews
    "web.mock_title": ("Mock interview", "模拟面试"),
    "web.mock_intro": (
        "A timed interview as it happens on CoderPad or HackerRank: a plain editor, a clock, Run for the public samples, Submit for the hidden tests, then follow-up questions and a scorecard.",
        "和 CoderPad、HackerRank 上一样的限时面试：朴素的编辑器、倒计时、运行公开样例的 Run、提交隐藏测试的 Submit，之后是追问和评分卡。",
    ),
    "web.mock_pick": (
        "Choose 1-3 problems, or none to have them picked for you",
        "选择 1-3 道题；不选则自动挑选",
    ),
    "web.mock_minutes": ("Minutes", "分钟数"),
    "web.mock_start": ("Start the interview", "开始面试"),
    "web.mock_past": ("Past interviews", "以往的面试"),
    "web.starting": ("starting…", "正在开始…"),
    "web.bad_minutes": ("Minutes must be a whole number.", "分钟数必须是整数。"),
    "web.run_button": ("Run", "运行"),
    "web.submit_button": ("Submit", "提交"),
    "web.mock_hint_button": ("Hint (costs points)", "提示（扣分）"),
    "web.hint_confirm": ("Click again: a hint costs points", "再点一次：提示会扣分"),
    "web.hint_cost": (
        "Hint {n} (it costs points on the scorecard)",
        "第 {n} 个提示（会在评分卡上扣分）",
    ),
    "web.finish_button": ("End the interview", "结束面试"),
    "web.finish_confirm": ("Click again to end the coding part", "再点一次结束编程部分"),
    "web.plain_editor": (
        "A plain editor, as in an interview: no autocomplete, no snippets, no AI completion. Pasting works and is recorded.",
        "和面试时一样的朴素编辑器：没有自动补全、代码片段或 AI 补全。可以粘贴，但会被记录。",
    ),
    "web.running": ("running the public samples…", "正在运行公开样例…"),
    "web.submitting": ("grading against the hidden tests…", "正在用隐藏测试评测…"),
    "web.samples_passed": (
        "{passed}/{total} public samples pass",
        "{passed}/{total} 个公开样例通过",
    ),
    "web.samples_note": (
        "Run checks the public samples only; Submit grades the hidden tests.",
        "Run 只检查公开样例；Submit 用隐藏测试评分。",
    ),
    "web.hidden_passed": (
        "{passed}/{total} hidden tests passed",
        "{passed}/{total} 个隐藏测试通过",
    ),
    "web.time_up": ("Time is up: your files are being graded.", "时间到：正在评测你的文件。"),
    "web.session_over": (
        "The interview {id} is over: nothing more is saved.",
        "面试 {id} 已结束：不再保存修改。",
    ),
    "web.grading_session": ("Grading your interview…", "正在评测你的面试…"),
    "web.grading_wait": (
        "The hidden tests run on what you submitted; the follow-up questions come next.",
        "隐藏测试正在评测你提交的代码；接下来是追问。",
    ),
    "web.abandoned": ("The interview {id} was abandoned.", "面试 {id} 已放弃。"),
    "web.followups_title": ("Follow-up questions", "追问"),
    "web.followups_intro": (
        "Answer what the interviewer asks next. For open questions the model answer appears once your answers are in; then rate your own answer 0-2.",
        "回答面试官接下来的问题。开放题的参考答案会在你提交答案后出现；然后给自己的答案打 0-2 分。",
    ),
    "web.followups_submit": ("Send the answers", "提交答案"),
    "web.answers_incomplete": ("Some questions have no answer yet.", "还有问题没有回答。"),
    "web.no_followups": (
        "The interview {id} is not waiting for follow-up answers.",
        "面试 {id} 不在等待追问的回答。",
    ),
    "web.pastes_title": ("Pastes", "粘贴"),
    "web.pastes_line": ("{n} paste(s), {chars} characters", "{n} 次粘贴，共 {chars} 个字符"),
    "web.replay_link": ("Replay the interview", "回放这次面试"),
    "web.mock_again": ("Another interview", "再来一次面试"),
    "web.replay_title": ("Replay", "回放"),
    "web.replay_after": (
        "The replay opens once the interview is over.",
        "面试结束后才能回放。",
    ),
    "web.replay_pasted": ("pasted {chars} characters", "粘贴了 {chars} 个字符"),
    "web.replay_kind_save": ("save", "保存"),
    "web.replay_kind_run": ("run", "运行"),
    "web.replay_kind_submit": ("submit", "提交"),
    "web.replay_kind_paste": ("paste", "粘贴"),
    "web.back_to_scorecard": ("Back to the scorecard", "返回评分卡"),
    # the instructor page
    "web.students_code": ("Each student's code", "每位学生的代码"),
}
