"""Where things are: the repository and the directories under build/ that
the harness writes (every path a module needs starts here)."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
LOG_DIR = BUILD / "logs"            # one .log and one .serial per guest
PROGRAMS = REPO / "bench" / "programs"   # example probe programs, templates/
