#!/usr/bin/env bash
# check-format.sh [--fix] - every tracked C file is formatted as .clang-format
# says (run by scripts/test.sh; --fix rewrites them in place).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu')
if [ "${1:-}" = --fix ]; then
    clang-format -i "${files[@]}"
    exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>format.err; then
    grep -E '^[^ ].*(warning|error):' format.err | cut -d: -f1 | sort | uniq -c >&2
    rm -f format.err
    echo "check-format: files above differ from .clang-format (scripts/check-format.sh --fix)" >&2
    exit 1
fi
rm -f format.err
echo "check-format: ${#files[@]} files formatted"
