"""User-facing messages of the grading engine, in English and Chinese.

Kata-specific text lives in each kata.toml and the mistake catalogue; this table holds the
engine's own sentences. `msg(key, lang, **params)` formats one.
"""

from __future__ import annotations

MESSAGES: dict[str, tuple[str, str]] = {
    "syntax_error_title": ("Syntax error", "语法错误"),
    "syntax_error": ("Python cannot parse your file: line {line}: {message}.",
                     "Python 无法解析你的文件：第 {line} 行：{message}。"),
    "missing_entry_title": ("`{name}` is not defined", "没有定义 `{name}`"),
    "missing_entry": ("The grader calls the {kind} `{name}`, but your file does not define it at the top "
                      "level. Your file defines: {found}.",
                      "评测会调用 {kind} `{name}`，但你的文件顶层没有定义它。你的文件定义了：{found}。"),
    "signature_title": ("The signature of `{name}` differs from the skeleton", "`{name}` 的签名与骨架不同"),
    "signature": ("Expected {expected}, found {found}. The grader passes arguments by these names.",
                  "应为 {expected}，实际为 {found}。评测按这些参数名传参。"),
    "load_title": ("Your file failed while loading", "加载文件时出错"),
    "exception_title": ("Your code raised {type}", "你的代码抛出了 {type}"),
    "exception": ("{message}", "{message}"),
    "crash_title": ("Your code ended the interpreter", "你的代码终止了解释器"),
    "timeout_title": ("Time limit exceeded", "超出时间限制"),
    "memory_title": ("Memory limit exceeded", "超出内存限制"),
    "banned_title": ("Banned API used", "使用了禁止的 API"),
    "no_match_title": ("No known mistake matched", "没有匹配到已知错误"),
    "no_match": ("The failing tests above show where the output differs; none of the catalogued "
                 "mistakes reproduces it.",
                 "上面失败的测试给出了输出不同的位置；目录中没有哪个已知错误能复现它。"),
    "file_not_found": ("no such file: {path}", "文件不存在：{path}"),
    "file_not_found_hint": ("run `kata start {kata}` to create it, or pass a path",
                            "运行 `kata start {kata}` 创建它，或传入文件路径"),
}


def msg(key: str, lang: str, **params: object) -> str:
    en, zh = MESSAGES[key]
    return (zh if lang == "zh" else en).format(**params)
