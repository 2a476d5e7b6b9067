"""json_field's evaluator (tests/runtime/report.sh): one Python process per test script,
since starting Python takes 0.1-0.2 s on the 2-core test machines and the decode scripts ask
hundreds of questions. Each request is a line FILE<TAB>EXPR; the answer is what
print(EXPR) prints over d, the first line of FILE starting with '{' read as JSON, then a
line \\x1e, then the error text (a traceback, or nothing), then a line \\x1e and the exit
status (0, or 1 when the file or the expression failed), as `python3 -c` would give them."""
import json
import sys
import traceback

SEP = "\x1e\n"
out = sys.stdout
for req in sys.stdin:
    path, _, expr = req.rstrip("\n").partition("\t")
    rc, err = 0, ""
    try:
        with open(path) as f:
            d = json.loads([line for line in f if line.startswith("{")][0])
        exec(compile("print(%s)" % expr, "<json_field>", "exec"),
             {"json": json, "sys": sys, "d": d})
    except BaseException:  # an expression's SystemExit included: it is its answer
        rc, err = 1, traceback.format_exc()
    out.write(SEP + err + ("" if err.endswith("\n") or not err else "\n") + SEP + "%d\n" % rc)
    out.flush()
