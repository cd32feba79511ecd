# Sourced by the benchmark scripts: prompt_of N prints the path of a prompt of about N
# tokens of $MODEL (in $WORK): the evaluation text $TEXT repeated, cut to N tokens' worth of
# characters (measured on the text itself), made with $CLI.
prompt_of() {
  local n=$1 out="$WORK/prompt-$1.txt"
  if [ ! -f "$out" ]; then
    local chars tokens
    chars=$(wc -c < "$TEXT")
    tokens=$("$CLI" tokenize -m "$MODEL" -f "$TEXT" --ids | tr -cd ',' | wc -c)
    python3 - "$TEXT" "$out" "$(( n * chars * 97 / 100 / tokens ))" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
n = int(sys.argv[3])
open(sys.argv[2], "w", encoding="utf-8").write((text * (n // len(text) + 1))[:n])
PY
  fi
  echo "$out"
}
