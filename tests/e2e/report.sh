#!/usr/bin/env bash
# report.sh MPIRUN TRAINER SOURCE_DIR: tools/report.py on a real language-model run (a char GPT
# on the README's text, 30 steps): the page is one self-contained HTML file (Python's HTML parser:
# balanced elements, no script, no style sheet or image from elsewhere, no http(s) reference but
# the SVG namespaces; the plots as inline SVG; the summary's run_id; the configuration), and a
# real browser (chromium --headless) loads it without a console error and its screenshot shows
# the plots' lines (matplotlib's blue and orange), which the same page without its SVG does not
# (negative control: that page also has a script error, which the console check catches).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
e2e_start "$@"  # $mpirun $trainer $src, the working directory $src, $tmp (removed at exit)
py=/usr/bin/python3
data_tool=$(dirname "$trainer")/hpctrain-data
cat README.md docs/training.md >"$tmp/text.txt"
"$data_tool" import-text --input "$tmp/text.txt" --out "$tmp/data" --val-fraction 0.1 >/dev/null || exit 1
vocab=$($py -c "import h5py; print(int(h5py.File('$tmp/data/train/tokens-00000.h5')['/'].attrs['vocab_size']))")
layers="embedding($vocab, 32) position_embedding repeat(2, res(layernorm(bias=0) attention(4, bias=0)) res(layernorm(bias=0) linear(64, bias=0) gelu linear(32, bias=0))) layernorm(bias=0) lm_head($vocab)"
printf '%s\n' "[run]" "out_dir = $tmp/run" "[data]" "path = $tmp/data" "[model]" "block_size = 16" "layers = $layers" \
  "[train]" "global_batch = 8" "steps = 30" "eval_every = 10" "[log]" "log_every = 5" "[optim]" "name = adamw" \
  "lr = 3e-3" >"$tmp/lm.ini"
"$mpirun" -q -np 1 --oversubscribe --bind-to none "$trainer" "$tmp/lm.ini" >"$tmp/train.log" 2>&1
check "a 30-step language-model run" test $? -eq 0 -a -f "$tmp/run/summary.json" -a -f "$tmp/run/config.ini"
out=$($py tools/report.py "$tmp/run" 2>&1)
check "report.py writes RUN_DIR/report.html ($out)" test $? -eq 0 -a -s "$tmp/run/report.html"
err=$($py tools/report.py "$tmp/data" 2>&1)
check "report.py on a folder without metrics.csv: exit 1, one line naming it" \
  test $? -eq 1 -a "$(wc -l <<<"$err")" -eq 1 -a -n "$(grep -F "$tmp/data: no metrics.csv" <<<"$err")"

check "the page parses: balanced, self-contained, inline SVG plots, the summary and the configuration" \
  $py - "$tmp/run" <<'PY'
import html.parser, json, sys
run = sys.argv[1]
text = open(run + "/report.html").read()
VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "source", "wbr"}
class Check(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.tags, self.data = [], {}, []
    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        assert tag not in ("script", "link", "iframe", "object", "embed", "img"), tag
        for k, v in attrs:
            assert not k.startswith("on"), (tag, k)  # no event handlers
            if v and not k.startswith("xmlns"):
                assert not v.strip().lower().startswith(("http:", "https:", "//", "javascript:")), (tag, k, v)
        if tag not in VOID:
            self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()
    def handle_data(self, d):
        self.data.append(d)
c = Check()
c.feed(text)
c.close()
assert not c.stack, c.stack
assert c.tags.get("svg") == 1 and c.tags.get("path", 0) > 20, c.tags
assert "url(http" not in text and "@import" not in text
words = "".join(c.data)
summary = json.load(open(run + "/summary.json"))
assert summary["run_id"] in words and "final_eval_perplexity" in words, "summary table"
assert "block_size = 16" in words, "configuration"
for panel in ("perplexity", "tokens/s", "learning rate", "gradient norm", "memory (MiB)"):
    assert panel in words, panel  # (the SVG keeps the titles as text)
PY

if ! command -v chromium >/dev/null; then
  echo "SKIP: chromium missing (tools/setup.sh installs it): the page was not rendered"
  finish
fi
shot() {  # html png: chromium renders the page; prints its console messages
  timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --enable-logging=stderr --v=0 \
    --window-size=1300,1500 --screenshot="$2" "file://$1" 2>&1 | grep -F "CONSOLE"
  test -s "$2"
}
console=$(shot "$tmp/run/report.html" "$tmp/page.png")
check "chromium --headless renders the page" test -s "$tmp/page.png"
check "... without a console message ($console)" test -z "$console"
# The negative control, one page for both checks: no SVG, and a script error.
$py -c "
import re
t = re.sub(r'<svg.*</svg>', '', open('$tmp/run/report.html').read(), flags=re.S)
open('$tmp/bare.html', 'w').write(t.replace('</body>', '<script>undefined_fn();</script></body>'))"
check "... (a page with a script error shows one: the check can fail)" test -n "$(shot "$tmp/bare.html" "$tmp/bare.png")"
cat >"$tmp/lines.py" <<'PY'
import sys
from PIL import Image
px = Image.open(sys.argv[1]).convert("RGB").getdata()
near = lambda p, c: sum(abs(a - b) for a, b in zip(p, c)) < 60
blue = sum(near(p, (31, 119, 180)) for p in px)
orange = sum(near(p, (255, 127, 14)) for p in px)
print(blue, orange)
PY
read -r blue orange < <($py "$tmp/lines.py" "$tmp/page.png")
read -r bare_blue bare_orange < <($py "$tmp/lines.py" "$tmp/bare.png")
check "the screenshot shows the plots' lines ($blue blue, $orange orange pixels)" \
  test "${blue:-0}" -gt 2000 -a "${orange:-0}" -gt 200
check "... which the page without its SVG lacks ($bare_blue, $bare_orange)" \
  test "${bare_blue:-1}" -lt 50 -a "${bare_orange:-1}" -lt 50
finish
