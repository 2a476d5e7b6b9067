"""What the planner's check scripts (check_cli.py, check_local.py, check_ckpt.py) share:
check() records and prints a failure, helix() runs the helix binary and returns its exit
code, stdout and stderr."""
import subprocess

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def helix(binary, args, env=None, timeout=60):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout,
                       env=env)
    return p.returncode, p.stdout, p.stderr
