#!/usr/bin/env bash
# Checks that every tracked C++ / CUDA source (.h .hpp .cpp .cu .cuh, as `git ls-files`
# lists them) is formatted as .clang-format says; exits 1 listing the files that differ.
#   scripts/check-format.sh        check (ctest runs it as test_format)
#   scripts/check-format.sh --fix  rewrite the files that differ, in place
# CI uses clang-format 14 (Debian's `clang-format` package); other versions can format
# differently. CLANG_FORMAT names another binary, e.g. CLANG_FORMAT=clang-format-14.
set -euo pipefail

fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  -h | --help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "check-format.sh: unknown argument '$1' (usage: scripts/check-format.sh [--fix])" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "check-format.sh: one argument at most (usage: scripts/check-format.sh [--fix])" >&2; exit 2; }

cd "$(dirname "$0")/.."

clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "check-format.sh: '$clang_format' not found: install Debian's clang-format package" \
    "(sudo apt-get install clang-format, or scripts/install-deps.sh)" >&2
  exit 2
fi
version=$("$clang_format" --version)
case "$version" in
  *"clang-format version 14."*) ;;
  *) echo "check-format.sh: note: $version; CI uses clang-format 14, whose output can differ" >&2 ;;
esac

# A source tree without git metadata (an unpacked tarball) has nothing to check: exit 77,
# which ctest reports as skipped. A checkout that git cannot read is an error.
if [ ! -e .git ]; then
  echo "check-format.sh: $(pwd) is not a git checkout; nothing to check" >&2
  exit 77
fi
command -v git >/dev/null 2>&1 || { echo "check-format.sh: git not found" >&2; exit 2; }
listed=$(git ls-files -z -- '*.h' '*.hpp' '*.cpp' '*.cu' '*.cuh' | tr '\0' '\n') ||
  { echo "check-format.sh: git ls-files failed in $(pwd)" >&2; exit 2; }
files=()
while IFS= read -r f; do
  [ -f "$f" ] && files+=("$f")  # tracked but deleted in the working tree: nothing to check
done <<<"$listed"
if [ ${#files[@]} -eq 0 ]; then
  echo "check-format.sh: no tracked .h/.hpp/.cpp/.cu/.cuh files; nothing to check"
  exit 0
fi

# One clang-format process for all the files (its start-up dominates; the whole tree takes
# a couple of seconds). Each file that differs is named on a line
#   FILE:LINE:COL: error: code should be clang-formatted [-Wclang-format-violations]
out=$(printf '%s\0' "${files[@]}" | xargs -0 "$clang_format" --dry-run --Werror --ferror-limit=1 -- 2>&1) && rc=0 || rc=$?
if grep -q '^Error reading ' <<<"$out"; then
  grep -E '^Error reading |\.clang-format:[0-9]+:[0-9]+: error: ' <<<"$out" | sort -u >&2 || true
  echo "check-format.sh: a .clang-format could not be read ($clang_format: $version)" >&2
  exit 2
fi
suffix=': error: code should be clang-formatted [-Wclang-format-violations]'
declare -A is_file=()
for f in "${files[@]}"; do is_file["$f"]=1; done
declare -A seen=()
differ=()
while IFS= read -r line; do
  [[ "$line" == *"$suffix" ]] || continue
  f=${line%"$suffix"}
  f=${f%:*}  # column
  f=${f%:*}  # line
  if [ -n "${is_file[$f]:-}" ] && [ -z "${seen[$f]:-}" ]; then
    seen["$f"]=1
    differ+=("$f")
  fi
done <<<"$out"
if [ "$rc" -ne 0 ] && [ ${#differ[@]} -eq 0 ]; then
  printf '%s\n' "$out" >&2
  echo "check-format.sh: $clang_format failed (exit $rc)" >&2
  exit 2
fi

if [ ${#differ[@]} -eq 0 ]; then
  echo "check-format.sh: ${#files[@]} files formatted as .clang-format says"
  exit 0
fi
if [ $fix -eq 1 ]; then
  "$clang_format" -i -- "${differ[@]}"
  printf '  %s\n' "${differ[@]}"
  echo "check-format.sh: reformatted ${#differ[@]} of ${#files[@]} files"
  exit 0
fi
printf '  %s\n' "${differ[@]}"
echo "check-format.sh: ${#differ[@]} of ${#files[@]} files differ from .clang-format;" \
  "scripts/check-format.sh --fix rewrites them"
exit 1
