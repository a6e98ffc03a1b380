"""Every user-facing sentence of attnkata's code, in English and Chinese: one catalogue, one lookup.

Kata-specific text lives in each kata.toml and the mistake catalogue (checker/mistakes.toml); this
catalogue holds the sentences of the engine, the CLI, mock interviews, problem sets and the HTML
page. It is one key space merged from a few data modules: the engine's own sentences below, and
messages_mock.py ("mock.", "scorecard."), messages_sets.py ("report.", "handout.", "readme.",
"grade.", "similarity.") and messages_ui.py ("render.", "grid.", "progress.", "mistakes.",
"html.", "hint.", "notebook.", "schedule.", "list_sep"), messages_diagnose.py ("trace.": the
diagnosis' trace checks), messages_web.py ("web.": `kata web`'s pages) and messages_variants.py
("variant.": per-student variants). A key is defined
once (checked here).

`msg(key, lang, **params)` formats one (English for any language but "zh"); `phrase(key, ...)`
defers the choice of language; `both(key, ...)` gives {"en": ..., "zh": ...} for text stored in
files and rendered later in either. tests/test_messages.py checks that every key has both languages
with the same placeholders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnkata.checker import (
    messages_diagnose,
    messages_fix,
    messages_mock,
    messages_sets,
    messages_ui,
    messages_variants,
    messages_web,
)

MESSAGES: dict[str, tuple[str, str]] = {
    "syntax_error_title": ("Syntax error", "语法错误"),
    "syntax_error": (
        "Python cannot parse your file: line {line}: {message}.",
        "Python 无法解析你的文件：第 {line} 行：{message}。",
    ),
    "too_complex_title": ("Your file nests too deeply to be graded", "文件嵌套过深，无法评测"),
    "too_complex": (
        "Python's parser cannot take your file apart ({reason}). No solution nests code this "
        "deeply; nothing was run.",
        "Python 的解析器无法解析你的文件（{reason}）。正常的解答不会嵌套得这么深；代码没有运行。",
    ),
    "too_complex_stack": ("its nesting exhausted the parser's stack", "嵌套耗尽了解析器的栈"),
    "too_complex_depth": (
        "code nested {depth} levels deep; the limit is {limit}",
        "代码嵌套了 {depth} 层，上限为 {limit} 层",
    ),
    "too_complex_parser": ("{message}", "{message}"),
    "encoding_title": (
        "Your file declares an encoding other than UTF-8",
        "文件声明了 UTF-8 以外的编码",
    ),
    "encoding": (
        "Line {line} declares `coding: {name}`; solutions are graded as UTF-8 text, so this file "
        "was not run. Delete the declaration (UTF-8 is Python's default).",
        "第 {line} 行声明了 `coding: {name}`；解答按 UTF-8 文本评测，所以这个文件没有运行。"
        "删掉这行声明即可（UTF-8 是 Python 的默认编码）。",
    ),
    "too_large_title": ("Your file is too large to be graded", "文件过大，无法评测"),
    "too_large": (
        "Your file is {size} bytes; files over {limit} bytes are not graded. Nothing was run.",
        "你的文件有 {size} 字节；超过 {limit} 字节的文件不予评测。代码没有运行。",
    ),
    # The static policy (checker/policy.py): what graded code may import and touch.
    "policy_warn": (
        "`kata check` still grades this file, but a mock interview refuses it (not run, failed), "
        "and a graded problem set runs it but may take points off for it.",
        "`kata check` 仍会评测这个文件，但模拟面试会拒绝它（不运行，直接判为不通过）；"
        "批改的题集会运行它，但可能因此扣分。",
    ),
    "policy_enforce": (
        "This file was not run: mock interviews refuse it.",
        "这个文件没有运行：模拟面试会拒绝这样的文件。",
    ),
    "policy_review": (
        "It is graded as usual; a graded problem set lists it for a person to read.",
        "它照常评测；批改题集时会把它列出来，留给人来看。",
    ),
    "policy_found": ("line {line}: {what}", "第 {line} 行：{what}"),
    "policy_where": ("`{what}` (line {line})", "`{what}`（第 {line} 行）"),
    "missing_entry_title": ("`{name}` is not defined", "没有定义 `{name}`"),
    "missing_entry": (
        "The grader calls the {kind} `{name}`, but your file does not define it at the top "
        "level. Your file defines: {found}.",
        "评测会调用 {kind} `{name}`，但你的文件顶层没有定义它。你的文件定义了：{found}。",
    ),
    "signature_title": (
        "The signature of `{name}` differs from the skeleton",
        "`{name}` 的签名与骨架不同",
    ),
    "signature": (
        "Expected {expected}, found {found}. The grader passes arguments by these names.",
        "应为 {expected}，实际为 {found}。评测按这些参数名传参。",
    ),
    "load_title": ("Your file failed while loading", "加载文件时出错"),
    "exception_title": ("Your code raised {type}", "你的代码抛出了 {type}"),
    "exception": ("{message}", "{message}"),
    "crash_title": ("Your code ended the interpreter", "你的代码终止了解释器"),
    "timeout_title": ("Time limit exceeded", "超出时间限制"),
    "memory_title": ("Memory limit exceeded", "超出内存限制"),
    "banned_title": ("Banned API used", "使用了禁止的 API"),
    "no_match_title": ("No known mistake matched", "没有匹配到已知错误"),
    "no_match": (
        "The failing tests above show where the output differs; none of the catalogued "
        "mistakes reproduces it.",
        "上面失败的测试给出了输出不同的位置；目录中没有哪个已知错误能复现它。",
    ),
    "file_not_found": ("no such file: {path}", "文件不存在：{path}"),
    "file_is_directory": (
        "{path} is a directory, not a solution file",
        "{path} 是一个目录，不是解答文件",
    ),
    "file_is_directory_hint": (
        "pass the .py file inside it, e.g. {path}/{file}",
        "请传入其中的 .py 文件，例如 {path}/{file}",
    ),
    "file_not_found_hint": (
        "run `kata start {kata}` to create it, or pass a path",
        "运行 `kata start {kata}` 创建它，或传入文件路径",
    ),
    # What the candidate's process was doing when it failed (checker/proxy.py).
    "doing_load": ("loading your file", "加载你的文件时"),
    "doing_call": ("calling {name}", "调用 {name} 时"),
    "doing_new": ("constructing {name}", "构造 {name} 时"),
    "doing_module": ("running your module", "运行你的模块时"),
    "where": (" (line {line})", "（第 {line} 行）"),
    # How it failed.
    "fail_timeout": (
        "timed out after {limit:g} s while {doing}: the time limit for one call (the reference's "
        "own time with a wide margin). Either the call never ends (an infinite loop, a wait), or it "
        "is far slower than it needs to be (a Python loop over every element)",
        "{doing}超时：超过了单次调用 {limit:g} 秒的时间限制（按参考实现的耗时并留有很大余量）。"
        "要么调用永远不会结束（死循环、等待），要么比应有的慢得多（例如用 Python 循环逐个元素计算）",
    ),
    "fail_total_timeout": (
        "timed out after {limit:g} s while {doing}: the total time limit, for all calls of "
        "this check together (an infinite loop, or code far slower than needed?)",
        "{doing}超时：超过了本次评测所有调用合计 {limit:g} 秒的总时间限制（死循环，或者代码慢得多？）",
    ),
    "fail_not_run": (
        "not run: your code already used the total time limit of {limit:g} s",
        "未运行：你的代码已经用完了 {limit:g} 秒的总时间限制",
    ),
    "fail_crashed": (
        "your code ended the interpreter while {doing} ({how}){last}",
        "{doing}你的代码终止了解释器（{how}）{last}",
    ),
    "fail_last_output": ("; last output: {tail}", "；最后的输出：{tail}"),
    "how_gone": ("it disappeared", "进程消失了"),
    "how_closed": (
        "it closed its connection to the grader and was stopped",
        "它关闭了与评测进程的连接，已被终止",
    ),
    "how_signal": ("killed by {signal}", "被信号 {signal} 终止"),
    "how_segfault": ("killed by {signal} (a segfault)", "被信号 {signal} 终止（段错误）"),
    "how_exit": ("exit code {code}, e.g. os._exit()", "退出码 {code}，例如调用了 os._exit()"),
    "fail_exit": (
        "your code ended the interpreter: it called {call} while {doing}{where}",
        "{doing}你的代码调用了 {call}，终止了解释器{where}",
    ),
    "fail_memory": (
        "memory limit exceeded ({mb} MiB) while {doing}{where}: {detail}",
        "{doing}超出内存限制（{mb} MiB）{where}：{detail}",
    ),
    "fail_banned_import": ("banned: {detail}", "禁止：{detail}"),
    "fail_banned_call": (
        "your code used {api} (fused attention kernels are banned in every kata)",
        "你的代码使用了 {api}（所有题目都禁止使用融合注意力内核）",
    ),
    "fail_banned_ops": (
        "your code used {apis}: write the attention yourself (fused attention kernels and "
        "nn.MultiheadAttention are banned in every kata)",
        "你的代码使用了 {apis}：请自己实现注意力（所有题目都禁止使用融合注意力内核和 "
        "nn.MultiheadAttention）",
    ),
    "fail_raised": (
        "your code raised {type}: {detail} while {doing}{where}",
        "{doing}你的代码抛出了 {type}：{detail}{where}",
    ),
    "fail_protocol": ("{detail} while {doing}", "{doing}{detail}"),
    "fail_missing_name": (
        "your file does not define `{name}` (it defines: {found})",
        "你的文件没有定义 `{name}`（它定义了：{found}）",
    ),
    "fail_module_lost": (
        "this module was lost when your process was stopped by an earlier failure",
        "之前的失败终止了你的进程，这个模块已经不存在了",
    ),
    "fail_unreadable": (
        "your process sent back something unreadable while {doing} ({detail})",
        "{doing}你的进程传回了无法读取的数据（{detail}）",
    ),
    "fail_no_grads": ("no gradients: {detail}", "没有梯度：{detail}"),
    "fail_after_timeout": (
        "not run: `{name}` already ran into the time limit in an earlier test (an infinite loop?)",
        "未运行：`{name}` 在之前的测试中已经超时（死循环？）",
    ),
    "fail_after_garbled": (
        "not run: `{name}` sent back an unreadable reply in an earlier test",
        "未运行：`{name}` 在之前的测试中传回了无法读取的数据",
    ),
    "fail_after_hang_up": (
        "not run: `{name}` closed its connection to the grader in an earlier test and stayed alive",
        "未运行：`{name}` 在之前的测试中关闭了与评测进程的连接且没有退出",
    ),
    "fail_too_large": (
        "your process sent back {detail} while {doing}; it was stopped",
        "{doing}你的进程传回了 {detail}，已被终止",
    ),
}

_PARTS = (
    messages_mock.MESSAGES,
    messages_sets.MESSAGES,
    messages_ui.MESSAGES,
    messages_diagnose.MESSAGES,
    messages_web.MESSAGES,
    messages_variants.MESSAGES,
    messages_fix.MESSAGES,
)
for _part in _PARTS:
    _clash = MESSAGES.keys() & _part.keys()
    assert not _clash, f"message keys defined twice: {sorted(_clash)}"
    MESSAGES.update(_part)


@dataclass(frozen=True)
class Phrase:
    """A message not yet put into a language; parameters may be phrases themselves."""

    key: str
    params: dict[str, Any] = field(default_factory=dict)

    def render(self, lang: str) -> str:
        return msg(
            self.key,
            lang,
            **{k: v.render(lang) if isinstance(v, Phrase) else v for k, v in self.params.items()},
        )


def phrase(key: str, **params: Any) -> Phrase:
    return Phrase(key, params)


def msg(key: str, lang: str, **params: object) -> str:
    """The message `key` in `lang` ("zh", else English), its {placeholders} filled from params."""
    en, zh = MESSAGES[key]
    return (zh if lang == "zh" else en).format(**params)


def both(key: str, **params: Any) -> dict[str, str]:
    """A message in both languages (stored in session and card files, rendered later in either);
    parameters may be phrases, put into each language in turn."""
    return {lang: phrase(key, **params).render(lang) for lang in ("en", "zh")}


def label(group: str, value: str, lang: str) -> str:
    """The name of an open-ended value (a status, a tier) under `group`; the value itself where
    the catalogue has no name for it."""
    key = f"{group}.{value}"
    return msg(key, lang) if key in MESSAGES else value


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary (CJK text, which has none, at the
    limit) and marked with an ellipsis: a message must never end mid-word."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"
