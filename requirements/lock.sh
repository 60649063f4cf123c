#!/usr/bin/env bash
# Writes requirements/ci.txt: every package that `pip install -e ".[test,docs,deep]"`
# installs today, each pinned to the version pip resolves now (the newest inside
# the ranges of pyproject.toml). .ci/run installs through it, so that CI builds
# the same environment on any machine until this is run again.
#
#     bash requirements/lock.sh        # from the project root; then commit requirements/ci.txt
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
"$work/venv/bin/python" -m pip install --quiet -e ".[test,docs,deep]"
{
    echo "# Every package of the CI environment, pinned (.ci/run installs with -c this file)."
    echo "# Written by requirements/lock.sh on $(date -u +%Y-%m-%d) with $("$work/venv/bin/python" --version)."
    "$work/venv/bin/python" -m pip freeze --exclude-editable | grep -v '^-e ' | LC_ALL=C sort -f
} >requirements/ci.txt
echo "requirements/ci.txt: $(grep -vc '^#' requirements/ci.txt) packages pinned"
