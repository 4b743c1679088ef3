#!/bin/sh
# Keeps citations of the design document true (docs/DESIGN.md §4.1 is one).
#
# Every source, build and documentation file of the tree (git's tracked and
# untracked-but-not-ignored files; every file under SOURCE_ROOT when it is not
# the top of a git work tree) is searched for the document's name. A line fails
# when:
#   - it names the document by any other path (a copy outside docs/, the
#     brief the project started from): only docs/ holds the design;
#   - a section it cites after the name ("§3", "§2.10", lists such as
#     "§2.3, §2.9") has no heading in the document (or numbered item: the
#     dotted number after "- " or "**", e.g. "- 2.3 ..." or "**5.4 ...**");
#   - in a file that is not Markdown, it names the document without a section
#     (a code comment must say where to read);
#   - it cites the document by its bare name, without ".md", before a
#     section sign.
# The document's own cross-references ("§3.7" in its text) must resolve too.
# Usage: citations.sh [SOURCE_ROOT]   (default: the repository).
# Exit 0 when every citation resolves; 1 with one file:line per problem;
# 2 when the document is missing or no file could be searched.
set -eu
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
root=$(cd "$root" && pwd -P)
name=DESIGN                      # spelled apart so this script does not cite itself
doc_rel="docs/$name.md"
doc="$root/$doc_rel"
sect=$(printf '\302\247')        # the section sign, UTF-8

if [ ! -f "$doc" ]; then
  echo "citations: $doc_rel is missing under $root"
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The document's sections: "## 3. Stages" -> 3, "### 3.4 Hard" -> 3.4,
# "**5.4 Nothing ...**" and "- 2.3 ..." -> 5.4, 2.3 (items: dotted numbers
# after "- " or "**" only, so neither a plain ordered list "1. ..." nor a prose
# line that happens to start with "2.13" stands for a section).
awk -v s="$sect" '
  /^#+[ \t]/ {
    line = $0; sub(/^#+[ \t]+/, "", line); sub("^" s, "", line)
    if (match(line, /^[0-9]+(\.[0-9]+)*/)) print substr(line, 1, RLENGTH)
    next
  }
  {
    if ($0 !~ /^[ \t]*([-*][ \t]+(\*\*)?|\*\*)[0-9]/) next
    line = $0; sub(/^[ \t]*([-*][ \t]+)?(\*\*)?/, "", line)
    if (match(line, /^[0-9]+(\.[0-9]+)+/)) {
      rest = substr(line, RLENGTH + 1)
      if (rest ~ /^\.?(\*\*)?([ \t]|$)/) print substr(line, 1, RLENGTH)
    }
  }' "$doc" | sort -u > "$tmp/sections"

# The files to search.
if top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null) && [ "$(cd "$top" && pwd -P)" = "$root" ]; then
  git -C "$root" ls-files --cached --others --exclude-standard > "$tmp/files"
else
  (cd "$root" && find . -type d \( -name .git -o -name 'build*' -o -name node_modules \) -prune -o -type f -print |
    sed 's|^\./||') > "$tmp/files"
fi
sort -u "$tmp/files" -o "$tmp/files"

checked=0
: > "$tmp/problems"
: > "$tmp/count"

# The document's own cross-references ("see §3.7") must resolve too.
awk -v f="$doc_rel" -v s="$sect" -v secfile="$tmp/sections" '
  BEGIN { while ((getline x < secfile) > 0) known[x] = 1 }
  {
    rest = $0
    while ((j = index(rest, s)) > 0) {
      rest = substr(rest, j + length(s))
      if (!match(rest, /^[0-9]+(\.[0-9]+)*/)) continue
      num = substr(rest, 1, RLENGTH)
      if (!(num in known)) print f ":" FNR ": refers to " s num ", which has no such section"
    }
  }' "$doc" >> "$tmp/problems"
while IFS= read -r f; do
  [ -f "$root/$f" ] || continue            # deleted in the work tree, not yet in git
  [ "$f" = "$doc_rel" ] && continue        # the document's own cross-references
  checked=$((checked + 1))
  grep -Iq "$name" "$root/$f" 2>/dev/null || continue
  case "$f" in *.md) md=1 ;; *) md=0 ;; esac
  awk -v f="$f" -v name="$name" -v s="$sect" -v md="$md" -v secfile="$tmp/sections" -v countfile="$tmp/count" '
    BEGIN { while ((getline x < secfile) > 0) known[x] = 1 }
    {
      line = $0
      # The bare name before a section sign: a citation without the file name.
      t = line
      while ((i = index(t, name " " s)) > 0) {
        print f ":" FNR ": cites \"" name " " s "...\"; cite it as docs/" name ".md " s "N"
        t = substr(t, i + 1)
      }
      t = line
      while ((i = index(t, name ".md")) > 0) {
        before = substr(t, 1, i - 1)
        after = substr(t, i + length(name) + 3)
        t = after
        if (before !~ /(^|[^A-Za-z0-9_.\/-])docs\/$/ && before !~ /(^|[^A-Za-z0-9_.-])\.\.\/docs\/$/ && before !~ /(^|[^A-Za-z0-9_.-])\.\.\/\.\.\/docs\/$/) {
          p = before; sub(/.*[^A-Za-z0-9_.\/-]/, "", p)
          print f ":" FNR ": cites " p name ".md; the design document is docs/" name ".md"
          continue
        }
        # The cited sections: the run of section signs right after the name, up
        # to the end of the parenthesis, clause or sentence.
        rest = after; sub(/[);:].*$/, "", rest)
        if (rest !~ "^[ \t]*" s "[0-9]") {
          if (!md) print f ":" FNR ": names docs/" name ".md without a section; cite docs/" name ".md " s "N"
          continue
        }
        while ((j = index(rest, s)) > 0) {
          rest = substr(rest, j + length(s))
          if (!match(rest, /^[0-9]+(\.[0-9]+)*/)) continue
          num = substr(rest, 1, RLENGTH)
          rest = substr(rest, RLENGTH + 1)
          print "x" >> countfile
          if (!(num in known))
            print f ":" FNR ": cites docs/" name ".md " s num ", which has no such section (no heading or numbered item " num ")"
        }
      }
    }' "$root/$f" >> "$tmp/problems"
done < "$tmp/files"

if [ $checked -eq 0 ]; then
  echo "citations: no files to search under $root"
  exit 2
fi
cited=$(wc -l < "$tmp/count" | tr -d ' ')
bad=$(wc -l < "$tmp/problems" | tr -d ' ')
if [ "$bad" -gt 0 ]; then
  cat "$tmp/problems"
  echo "citations: $bad problem(s) in $checked file(s) ($cited section citation(s) of $doc_rel)"
  exit 1
fi
echo "citations: $cited section citation(s) of $doc_rel in $checked file(s), all resolve"
