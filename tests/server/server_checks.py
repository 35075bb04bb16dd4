"""What the server tests share: a check that says what passed, and their command line. Importing
it also makes bench/ (serve_harness) importable."""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))


def check(condition, message):
    """Raises with `message` unless `condition`; prints what passed (the message up to its colon)."""
    if not condition:
        raise AssertionError(message)
    print("ok:", message.split(":")[0], flush=True)


def arguments(**models):
    """(arguments, tools): --cli, --tools (a JSON file, read) and one required option per entry
    of `models` (its name, then its help)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    for name, help_text in models.items():
        parser.add_argument("--" + name, required=True, help=help_text)
    parser.add_argument("--tools", required=True)
    args = parser.parse_args()
    return args, json.loads(Path(args.tools).read_text())
