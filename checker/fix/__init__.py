"""`kata fix`: a verified repair of the candidate's own code for each essential diagnosis.

`search.repair` takes a failing check's result; for each catalogued mistake it diagnosed, the
repair templates of that id (`templates/`) propose small edits of the candidate's own source
(libcst keeps their formatting and comments: `site.py`), nearest the lines the diagnosis
points at first, and every candidate is graded again through the checker API in the sandbox
(`verify.py`). Only a candidate whose grade shows the tests that mistake explains now
passing, and no test that passed before failing, becomes a `models.Fix`. `files.py` writes a
repaired file with its previous version kept (`kata fix --write`, `--undo`).
"""
