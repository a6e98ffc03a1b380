"""The grading engine: loads katas, runs graders against isolated candidate code, diagnoses."""
