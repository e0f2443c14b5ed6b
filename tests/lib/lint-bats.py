#!/usr/bin/env python3
#
# tests/lib/lint-bats.py - refuses two ways a bats test passes having
# checked nothing
#
#   lint-bats.py [FILE.bats...]
#
# Without FILEs: tests/fs/*.bats and tests/lib/harness.bats.
#
# 1. A command line whose first word is `!`: bash's errexit ignores a
#    negated command, so `! grep -q x log` in the middle of a test never
#    fails it.  Write `run ! cmd` or `! cmd || false` (which fails on the
#    `false`).  A `!` that continues a list (after a line ending in `||`,
#    `&&` or `|`) or a condition (`if ! cmd`, `while ! cmd`) is not a
#    command line of its own and is let through.
# 2. A `return` in a @test before the first assertion: the test then ends
#    with status 0 having checked nothing, and counts as a pass.  The cases
#    that do not apply to a backend are not defined for it instead.  An
#    assertion, here, is a line that starts with one of ASSERT_WORDS or
#    ends with `|| false`.
#
# Prints FILE:LINE: message for each, and exits 1 if there was any.  It
# reads lines with bash's quoting, roughly, not its grammar: a
# here-document and the rest of a multi-line quoted string (the Python the
# tests pass to fs_try) are not command lines.
import glob
import os
import re
import sys

ASSERT_WORDS = ('[', '[[', '((', 'test', 'kv_is', 'kv_same', 'kv_absent',
                'kv_has', 'cmp', 'diff', 'grep', 'wait_for',
                'fs_wait_value', 'wait_event', 'wait_mirror_equal',
                'fs_wait_applied', 'check_', 'expect_', 'assert_')

CONTINUES = re.compile(r'(\|\||&&|\||\\)\s*$')
ENDS_FALSE = re.compile(r'\|\|\s*false\s*$')
HEREDOC = re.compile(r'(?<!<)<<-?(?!<)\s*([\'"]?)([A-Za-z_]\w*)\1')


def scan(line, quote):
    """@line's code outside quotes and comments, with the quote (None, "'"
    or '"') it was open in at its start and is open in at its end: bash's
    quoting, roughly (escapes, $'...', comments at a word's start)."""
    code = []
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if quote == "'":
            if c == "'":
                quote = None
            i += 1
            continue
        if quote == '"' or quote == "$'":
            if c == '\\':
                i += 2
                continue
            if (c == '"' and quote == '"') or (c == "'" and quote == "$'"):
                quote = None
                code.append('S')
            i += 1
            continue
        if c == '\\':
            code.append(line[i:i + 2])
            i += 2
            continue
        if c == '#' and (i == 0 or line[i - 1] in ' \t;'):
            break
        if c == '$' and line[i + 1:i + 2] == "'":
            quote = "$'"
            i += 2
            continue
        if c in '\'"':
            quote = c
            i += 1
            continue
        code.append(c)
        i += 1
    return ''.join(code).rstrip(), quote


def is_assertion(code):
    word = code.split()[0] if code.split() else ''
    if ENDS_FALSE.search(code):
        return True
    return any(word == w or (w.endswith('_') and word.startswith(w))
               for w in ASSERT_WORDS)


def lint(path):
    errors = []
    with open(path, encoding='utf-8', errors='surrogateescape') as f:
        lines = f.read().split('\n')
    in_test = False
    asserted = False
    prev = ''
    heredoc = None
    quote = None
    for no, raw in enumerate(lines, 1):
        if heredoc:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        opened_in = quote
        code, quote = scan(raw, quote)
        if opened_in:
            # the rest of a multi-line string: not a command line
            prev = code if not quote else ''
            continue
        m = HEREDOC.search(raw) if '<<' in code else None
        if m:
            heredoc = m.group(2)
        if raw.startswith('@test '):
            in_test, asserted = True, False
        elif raw.startswith('}'):
            in_test = False
        stripped = code.strip()
        if not stripped:
            continue
        continued = bool(CONTINUES.search(prev))
        prev = code
        if continued:
            continue
        first = stripped.split()[0]
        if first == '!' and not ENDS_FALSE.search(stripped):
            errors.append('%s:%d: a bare `! cmd` never fails the test '
                          '(errexit ignores it): write `run ! cmd` or '
                          '`! cmd || false`' % (path, no))
        if not in_test:
            continue
        if is_assertion(stripped):
            asserted = True
        elif re.search(r'(^|[;&|{]\s*|\bthen\s+)return(\s+0)?\s*($|[;}])',
                       stripped) and not asserted:
            errors.append('%s:%d: a `return` before any assertion: the '
                          'test passes having checked nothing' % (path, no))
    return errors


def main():
    paths = sys.argv[1:]
    if not paths:
        tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        paths = sorted(glob.glob(os.path.join(tests, 'fs', '*.bats')))
        paths.append(os.path.join(tests, 'lib', 'harness.bats'))
    errors = []
    for path in paths:
        errors += lint(path)
    for e in errors:
        print(e)
    if errors:
        print('# %d problem(s) in %d file(s)' % (len(errors), len(paths)))
        return 1
    print('# %d file(s) clean' % len(paths))
    return 0


if __name__ == '__main__':
    sys.exit(main())
