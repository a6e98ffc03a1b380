"""Problem sets for a class: `kata set create` writes a bundle (student folder, instructor
folder, printable handout); `kata set grade` grades a folder of submissions in parallel,
resumably, and writes a gradebook, per-student feedback and a class report.

Only `grade` and the public-sample generation import torch; everything else is stdlib (+
markdown-it-py for the handout)."""
