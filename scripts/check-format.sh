#!/usr/bin/env bash
# check-format.sh [--fix] - every tracked C file is formatted as .clang-format
# says (run by scripts/test.sh; --fix rewrites them in place). clang-format
# 14 (Debian 12's, installed by scripts/deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu')
if [ "${1:-}" = --fix ]; then
    clang-format -i "${files[@]}"
    exit 0
fi
err=$(mktemp)
trap 'rm -f "$err"' EXIT
if ! clang-format --dry-run --Werror "${files[@]}" 2>"$err"; then
    grep -E '^[^ ].*(warning|error):' "$err" | cut -d: -f1 | sort | uniq -c >&2
    echo "check-format: files above differ from .clang-format (scripts/check-format.sh --fix)" >&2
    exit 1
fi
echo "check-format: ${#files[@]} files formatted"
