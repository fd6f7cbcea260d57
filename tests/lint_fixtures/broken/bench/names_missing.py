"""Broken on purpose for the paths rule: this docstring names
bench/gone.py, and so does the comment below."""

# bench/gone_too.py
ANSWER = "bench/not_a_comment.py"   # a string, not prose: not checked
