"""Applies docs/contributing.md's worked example to a tree (tests/e2e/recipe.sh).

    recipe_apply.py CONTRIBUTING_MD ROOT

Every `<!-- recipe: FILE MODE ["TEXT"] -->` comment is followed by a fenced code block: MODE new
writes FILE from the block; after / before put the block's lines after / before the one line of
FILE equal to TEXT; replace puts the block in place of TEXT (which must occur once). Prints one
line per edit; an anchor that is missing or not unique is an error naming the file and the text.
"""
import os
import re
import sys

doc, root = sys.argv[1], sys.argv[2]
text = open(doc).read()
pattern = re.compile(r'<!-- recipe: (\S+) (new|after|before|replace)(?: "((?:[^"\\]|\\.)*)")? -->\n```[a-z]*\n(.*?)```',
                     re.S)
edits = pattern.findall(text)
if not edits:
    sys.exit("%s: no recipe blocks" % doc)
for path, mode, anchor, block in edits:
    anchor = anchor.replace('\\"', '"')
    target = os.path.join(root, path)
    if mode == "new":
        if os.path.exists(target):
            sys.exit("%s: exists already" % path)
        open(target, "w").write(block)
        print("new     %s (%d lines)" % (path, block.count("\n")))
        continue
    body = open(target).read()
    if mode == "replace":
        if body.count(anchor) != 1:
            sys.exit('%s: "%s" occurs %d times, not once' % (path, anchor, body.count(anchor)))
        body = body.replace(anchor, block.rstrip("\n"))
    else:
        lines = body.split("\n")
        hits = [i for i, line in enumerate(lines) if line == anchor]
        if len(hits) != 1:
            sys.exit('%s: the line "%s" occurs %d times, not once' % (path, anchor, len(hits)))
        at = hits[0] + (1 if mode == "after" else 0)
        lines[at:at] = block.rstrip("\n").split("\n")
        body = "\n".join(lines)
    open(target, "w").write(body)
    print("%-7s %s: %s" % (mode, path, anchor))
