"""Prints a linalg module without its `stage.*` argument attributes (the
`{stage.param = ..., stage.dims = [...]}` dictionaries), as a frontend that
annotates nothing would give it."""
import re
import sys

text = open(sys.argv[1]).read()
stripped = re.sub(r"\s*\{stage\.[^{}]*\}", "", text)
if "stage." in re.sub(r"//.*", "", stripped):
    sys.exit("an annotation was left in " + sys.argv[1])
sys.stdout.write(stripped)
