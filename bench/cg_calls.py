#!/usr/bin/env python3
"""Sum the call counts into functions whose names match regexes, in a callgrind out file.

Usage: bench/cg_calls.py callgrind.out REGEX... [--per N]
Prints one line per regex: the total number of calls (divided by N with --per).
Used by bench/profile.sh to count allocations per request.
"""
import collections
import re
import sys


def main():
    args = sys.argv[1:]
    per = 1
    if "--per" in args:
        i = args.index("--per")
        per = int(args[i + 1])
        del args[i:i + 2]
    path, pats = args[0], [re.compile(p) for p in args[1:]]
    names = {}  # callgrind name compression: "(id) name" the first time, "(id)" after
    calls = collections.Counter()
    target = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if not m:  # --compress-strings=no: the name itself
                m = re.match(r"^(c?fn)=()(.+)$", line.rstrip("\n"))
            if m:
                kind, ident, name = m.groups()
                ident = ident or name
                if name:
                    names[ident] = name
                if kind == "cfn":
                    target = names.get(ident)
                continue
            if line.startswith("calls=") and target:
                n = int(line.split("=", 1)[1].split()[0])
                for p in pats:
                    if p.search(target):
                        calls[p.pattern] += n
    for p in pats:
        print(p.pattern, round(calls[p.pattern] / per, 1))


if __name__ == "__main__":
    main()
