#!/bin/sh
# The citation check fails when it should: a small tree with a design document
# and files citing it, some rightly and some wrongly; the check must name each
# wrong one with its file and line, exit 1, and pass once they are fixed. The
# document's name is assembled from parts so this file cites nothing itself.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
n=DESIGN
s=$(printf '\302\247')
mkdir -p "$t/docs" "$t/core" "$t/probes" "$t/build-x"

printf '# design\n\n## 1. Purpose\n\n### 1.1 The operator\n\n## 2. Rules\n\n- 2.3 an item\n\n**2.4 A bold item.** text\nwrapped prose about version\n2.5 of something\n\n1. a plain list item\n' > "$t/docs/$n.md"
printf '// fine (docs/%s.md %s1.1)\n// a list (docs/%s.md %s1, %s2.3, %s2.4)\n' "$n" "$s" "$n" "$s" "$s" "$s" > "$t/core/good.h"
printf 'See [the design](docs/%s.md).\n' "$n" > "$t/README.md"
printf '#pragma once\n// docs/%s.md %s1.4 is not there\n' "$n" "$s" > "$t/core/bad_section.h"
printf '// (%s.md %s1)\n' "$n" "$s" > "$t/core/bare_path.cc"
printf '// see /somewhere/else/%s.md %s1\n' "$n" "$s" > "$t/probes/other_path.cc"
printf '// (%s %s1)\n' "$n" "$s" > "$t/probes/no_file.h"
printf '// docs/%s.md: the reuse ratio\n' "$n" > "$t/probes/no_section.h"
printf '// docs/%s.md %s2.30\n' "$n" "$s" > "$t/probes/near_miss.h"
printf '// docs/%s.md %s2.5 (a prose line starting with 2.5 is no section)\n' "$n" "$s" > "$t/probes/prose.h"
printf '// docs/%s.md %s5.4 (never looked at: build folders are skipped)\n' "$n" "$s" > "$t/build-x/gen.h"

set +e
out=$(sh "$here/citations.sh" "$t")
rc=$?
set -e
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -eq 1 ] || fail "expected exit 1 for wrong citations, got $rc"
expect() { echo "$out" | grep -q "^$1" || fail "not reported: $1"; }
expect "core/bad_section.h:2: cites docs/$n.md ${s}1.4, which has no such section"
expect "core/bare_path.cc:1: cites $n.md; the design document is docs/$n.md"
expect "probes/other_path.cc:1: cites /somewhere/else/$n.md"
expect "probes/no_file.h:1: cites \"$n $s"
expect "probes/no_section.h:1: names docs/$n.md without a section"
expect "probes/near_miss.h:1: cites docs/$n.md ${s}2.30"
expect "probes/prose.h:1: cites docs/$n.md ${s}2.5,"
[ "$(echo "$out" | grep -c '^[a-z].*:[0-9]*: ')" -eq 7 ] || fail "a right citation was reported, or a wrong one twice"
echo "$out" | grep -q 'good.h\|README.md\|build-x' && fail "a right citation or a build folder was reported"

# A plain "1." list item does not stand for section 1: without the heading it fails.
sed 's/^## 1\. Purpose$/## Purpose/' "$t/docs/$n.md" > "$t/doc.tmp" && mv "$t/doc.tmp" "$t/docs/$n.md"
rm "$t/core/bad_section.h" "$t/core/bare_path.cc" "$t/probes/other_path.cc" "$t/probes/no_file.h" \
   "$t/probes/no_section.h" "$t/probes/near_miss.h" "$t/probes/prose.h"
set +e
out=$(sh "$here/citations.sh" "$t")
rc=$?
set -e
[ $rc -eq 1 ] && echo "$out" | grep -q "^core/good.h:2: cites docs/$n.md ${s}1," ||
  fail "section 1 resolved through a plain list item: $out"

# A cross-reference inside the document to a missing section fails as well.
printf '\nAs %s1.1 and %s2.9 say.\n' "$s" "$s" >> "$t/docs/$n.md"
set +e
out=$(sh "$here/citations.sh" "$t")
rc=$?
set -e
[ $rc -eq 1 ] && echo "$out" | grep -q "^docs/$n.md:[0-9]*: refers to ${s}2.9," &&
  ! echo "$out" | grep -q "refers to ${s}1.1," || fail "a dangling cross-reference in the document passed: $out"

# The fixed tree passes.
printf '# design\n\n## 1. Purpose\n\n### 1.1 The operator\n\n## 2. Rules\n\n- 2.3 an item\n\n**2.4 A bold item.** text\n' > "$t/docs/$n.md"
sh "$here/citations.sh" "$t" || fail "a tree whose citations all resolve was rejected"

# No document at all is its own error.
rm "$t/docs/$n.md"
set +e
sh "$here/citations.sh" "$t" > /dev/null
rc=$?
set -e
[ $rc -eq 2 ] || fail "a missing document gave exit $rc, not 2"
echo "ok: wrong citations are caught"
