"""The kata folders: `<slug>/kata.toml`, statements, skeletons and pytest graders (package
data; `checker/catalog.py` reads them by path)."""
