#!/usr/bin/env bash
# Checks that the C++ lines a change touches are formatted as .clang-format says (clang-format 19
# through git-clang-format). Only changed lines: the existing sources are not reformatted.
#
#   scripts/check-format.sh                     the last commit (HEAD~1..HEAD)
#   scripts/check-format.sh BASE                the commits since BASE, e.g. origin/main (from
#                                               their common ancestor)
#   scripts/check-format.sh --worktree [BASE]   uncommitted work: the working tree against BASE
#                                               (default HEAD); tracked files only, so `git add
#                                               -N` a new file first
#
# Exits 0 when the lines are formatted (or no C++ file changed), 1 with the diff clang-format
# wants when they are not (apply it with `git clang-format-19 BASE`), 2 on a usage error.
# CLANG_FORMAT names the clang-format binary (default clang-format-19).
set -euo pipefail

usage() {
    sed -n '5,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit "${1:-2}"
}

worktree=0
base=""
while [[ $# -gt 0 ]]; do
    case "$1" in
    --worktree) worktree=1 ;;
    -h | --help) usage 0 ;;
    -*) echo "check-format: unknown option '$1'" >&2; usage ;;
    *)
        [[ -z "$base" ]] || { echo "check-format: one BASE only" >&2; usage; }
        base="$1"
        ;;
    esac
    shift
done
if [[ -z "$base" ]]; then
    if [[ $worktree -eq 1 ]]; then base=HEAD; else base=HEAD~1; fi
fi

clang_format="${CLANG_FORMAT:-clang-format-19}"
git_clang_format="git-${clang_format}"
for tool in "$clang_format" "$git_clang_format"; do
    if ! command -v "$tool" >/dev/null; then
        echo "check-format: '$tool' not found (Debian: apt-get install clang-format-19;" \
             "or make deps-clang)" >&2
        exit 2
    fi
done

cd "$(git rev-parse --show-toplevel)"
if ! git rev-parse --verify --quiet "${base}^{commit}" >/dev/null; then
    echo "check-format: '$base' names no commit here (the first commit, or a shallow clone:" \
         "fetch more history or name another BASE)" >&2
    exit 2
fi

# The C++ sources and headers ember has (git-clang-format's default list also takes .js, .proto,
# .java and more, which clang-format would format with its defaults).
extensions=cpp,h,hpp,cc,cxx,inc
if [[ $worktree -eq 1 ]]; then
    what="the working tree's changes against $base"
    args=("$base")
else
    # From the common ancestor, so that BASE's own later commits are not taken for this change's
    # (git-clang-format 19's --diff_from_common_commit hands `A...B` to diff-tree, which takes no
    # such range).
    what="the commits $base..HEAD"
    args=("$(git merge-base "$base" HEAD)" HEAD)
fi
# --diff prints what clang-format would change and exits 1 when that is anything.
set +e
out=$("$git_clang_format" --binary "$(command -v "$clang_format")" --extensions "$extensions" \
      --diff "${args[@]}" 2>&1)
rc=$?
set -e
case "$rc" in
0)
    # git-clang-format says why when it formatted nothing; an empty diff says nothing.
    echo "check-format: $what: formatted (${out:-clang-format changes none of the lines})"
    ;;
1)
    echo "$out"
    echo "check-format: $what: not formatted as .clang-format says; the diff above is the fix" \
         "(git $clang_format $base applies it to the working tree)" >&2
    exit 1
    ;;
*)
    echo "$out" >&2
    echo "check-format: $git_clang_format failed (exit status $rc)" >&2
    exit 2
    ;;
esac
