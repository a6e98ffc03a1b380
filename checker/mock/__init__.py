"""Timed mock interviews: pick problems, run the clock, grade a snapshot, ask the interviewer's
follow-up questions and produce a scorecard.

`session` (state on disk + history rows), `picker`, `followups` and `scorecard` are stdlib-only so
`kata mock status/history` and `kata solution` answer without importing torch; `grading` and
`worker` import the runner lazily.
"""
