#!/usr/bin/env python3
"""testlint.py - finds test assertions that cannot fail (run by t0015).

A test body (tests/e2e/lib.sh, test_expect_success) runs under
`set -e -o pipefail`. Bash does not exit on a failing `! cmd`, so a negated
pipeline asserts nothing unless its status is the body's own: the last
pipeline of the body's last statement, or one followed by `||` (whose right
side then runs: `! cmd || exit 1`). Everywhere else (mid-body, inside a
loop, before `&&` in a statement that is not the last) it is dead; write
`refute cmd` or `if cmd; then say ...; false; fi`. The same holds in the
functions a script defines (called from its bodies). Likewise a link of an
&& chain that is not the body's last statement: when it fails, the rest of
the chain is skipped and the body goes on (`pull r && test ...` followed by
more lines asserts nothing); a test body (not a helper function) may chain
with && only in its last statement, before a `||` handler, after a test
(`[ -s f ] && kill ...`), or towards a break/continue/return/exit.

Under pipefail `producer | grep -q` (or `| grep -m N`, `| head`) is a race:
the reader may exit before the producer has written everything, and the
producer then dies of SIGPIPE (or fails on EPIPE), failing the test; this
lint flags those too (write to a file, then grep it; or grep without -q).

Usage: testlint.py FILE...   (prints FILE:LINE: what, exits 1 if any)
       testlint.py --self-test
The shell is read by a small lexer and parser of its own (quotes, $(...),
here-documents, compound commands, functions); a test body is the second
word after test_expect_success, decoded as the shell would ('...' parts,
"..." parts, '"'"' splices), and parsed again.
"""

import re
import sys

OPS = ["&&", "||", ";;&", ";;", ";&", "|&", "|", "&", ";", "(", ")"]
REDIR = re.compile(r"[0-9]*(?:&>>|&>|>>|>&|<&|<>|>\||<<<|<<-|<<|>|<)")
META = set(" \t\n;&|()<>")


class Tok:
    def __init__(self, kind, text, line, value=None, literal=True):
        self.kind = kind  # "word", "op", "nl", "redir"
        self.text = text
        self.line = line
        self.value = text if value is None else value
        self.literal = literal

    def __repr__(self):
        return "%s:%r@%d" % (self.kind, self.text, self.line)


class LexError(Exception):
    pass


def _skip_nested(s, i, close):
    """From s[i] inside $( ... ) (or ${, $((), returns the index after the
    matching `close`, honouring quotes and nesting."""
    depth = 1
    opener = {")": "(", "}": "{"}[close]
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                raise LexError("unterminated '")
            i = j + 1
            continue
        if c == '"':
            i = _skip_dquote(s, i + 1)
            continue
        if c == "`":
            j = s.find("`", i + 1)
            i = (j if j >= 0 else n) + 1
            continue
        if c == "$" and i + 1 < n and s[i + 1] in "({":
            i = _skip_nested(s, i + 2, ")" if s[i + 1] == "(" else "}")
            continue
        if c == opener:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise LexError("unterminated $%s" % opener)


def _skip_dquote(s, i):
    """From just after an opening ", returns the index after its closing "."""
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        if c == "`":
            j = s.find("`", i + 1)
            i = (j if j >= 0 else n) + 1
            continue
        if c == "$" and i + 1 < n and s[i + 1] in "({":
            i = _skip_nested(s, i + 2, ")" if s[i + 1] == "(" else "}")
            continue
        i += 1
    raise LexError('unterminated "')


def _dq_value(raw):
    """The value of the inside of "..." with its backslash escapes undone
    (expansions are kept as written: a body is code, not data)."""
    out, i = [], 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw) and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(raw[i])
        i += 1
    return "".join(out)


def lex(s, line0=1):
    toks = []
    i, n, line = 0, len(s), line0
    heredocs = []  # (delimiter, strip_tabs) waiting for the next newline
    while i < n:
        c = s[i]
        if c in " \t":
            i += 1
            continue
        if c == "\\" and i + 1 < n and s[i + 1] == "\n":
            i += 2
            line += 1
            continue
        if c == "#":
            j = s.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "\n":
            toks.append(Tok("nl", "\n", line))
            i += 1
            line += 1
            for delim, strip in heredocs:
                while True:
                    if i >= n:
                        raise LexError("here-document %s not ended" % delim)
                    j = s.find("\n", i)
                    j = n if j < 0 else j
                    text = s[i:j]
                    i = j + 1
                    line += 1
                    if (text.lstrip("\t") if strip else text) == delim:
                        break
            heredocs = []
            continue
        if s.startswith("<(", i) or s.startswith(">(", i):  # process substitution
            j = _skip_nested(s, i + 2, ")")
            toks.append(Tok("word", s[i:j], line, literal=False))
            line += s.count("\n", i, j)
            i = j
            continue
        m = REDIR.match(s, i)
        if m and (m.group(0)[0] in "<>&" or m.group(0)[-1] in "<>&|"):
            op = m.group(0)
            if op.startswith("&") and not op.startswith("&>"):
                m = None
        if m:
            op = m.group(0)
            i = m.end()
            if op.endswith("&") and i < n and (s[i].isdigit() or s[i] == "-"):
                while i < n and (s[i].isdigit() or s[i] == "-"):
                    op += s[i]
                    i += 1
                toks.append(Tok("redir", op, line))
                continue
            toks.append(Tok("redir", op, line))
            if op.endswith("<<") or op.endswith("<<-"):
                while i < n and s[i] in " \t":
                    i += 1
                w, i, line2 = _word(s, i, line)
                heredocs.append((w.value, op.endswith("-")))
                toks.append(w)
                line = line2
            continue
        if s.startswith("((", i) and (not toks or toks[-1].kind in ("nl", "op")):
            j = s.find("))", i)
            if j < 0:
                raise LexError("unterminated ((")
            toks.append(Tok("word", s[i : j + 2], line))
            line += s.count("\n", i, j)
            i = j + 2
            continue
        for op in OPS:
            if s.startswith(op, i):
                toks.append(Tok("op", op, line))
                i += len(op)
                break
        else:
            w, i, line = _word(s, i, line)
            toks.append(w)
    toks.append(Tok("nl", "\n", line))
    return toks


def _word(s, i, line):
    """One word from s[i]: returns (Tok, next index, line after it)."""
    start, n, val, literal = i, len(s), [], True
    startline = line
    while i < n and s[i] not in META:
        c = s[i]
        if c == "=" and s.startswith("=(", i) and re.match(r"^[A-Za-z_][A-Za-z_0-9]*(\+)?$", s[start:i]):
            j = _skip_nested(s, i + 2, ")")  # an array: a=(x y)
            val.append(s[i:j])
            i = j
            continue
        if c == "\\":
            if i + 1 < n and s[i + 1] != "\n":
                val.append(s[i + 1])
            i += 2
        elif c == "'":
            j = s.find("'", i + 1)
            if j < 0:
                raise LexError("unterminated ' from line %d" % startline)
            val.append(s[i + 1 : j])
            i = j + 1
        elif c == '"':
            j = _skip_dquote(s, i + 1)
            val.append(_dq_value(s[i + 1 : j - 1]))
            literal = literal and "$" not in s[i:j] and "`" not in s[i:j]
            i = j
        elif c == "$" and s.startswith("$'", i):
            j = i + 2
            while j < n and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            val.append(s[i : j + 1])
            i = j + 1
        elif c == "$" and i + 1 < n and s[i + 1] in "({":
            j = _skip_nested(s, i + 2, ")" if s[i + 1] == "(" else "}")
            val.append(s[i:j])
            literal = False
            i = j
        elif c == "`":
            j = s.find("`", i + 1)
            j = n if j < 0 else j
            val.append(s[i : j + 1])
            literal = False
            i = j + 1
        else:
            if c == "$":
                literal = False
            val.append(c)
            i += 1
    text = s[start:i]
    return Tok("word", text, startline, "".join(val), literal), i, startline + text.count("\n")


# --- parser: lists of and-or lists of pipelines of commands ----------------

RESERVED_END = {"then", "elif", "else", "fi", "do", "done", "esac", "}"}


class Pipeline:
    def __init__(self, line, negated):
        self.line = line
        self.negated = negated
        self.cmds = []  # Cmd


class Cmd:
    def __init__(self, kind, line):
        self.kind = kind  # simple, group, subshell, if, loop, case, func
        self.line = line
        self.words = []  # simple: its words (Tok)
        self.lists = []  # compound: [(role, [AndOr])] role: cond|body|loop
        self.name = None  # func


class AndOr:
    def __init__(self):
        self.pipes = []  # Pipeline
        self.ops = []  # "&&" / "||" between them
        self.background = False


class ParseError(Exception):
    pass


class Parser:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else Tok("eof", "", -1)

    def next(self):
        tok = self.peek()
        self.i += 1
        return tok

    def at_word(self, *words):
        tok = self.peek()
        return tok.kind == "word" and tok.text in words

    def skip_nl(self):
        while self.peek().kind == "nl":
            self.i += 1

    def expect_word(self, w):
        self.skip_nl()
        tok = self.next()
        if not (tok.kind == "word" and tok.text == w):
            raise ParseError("line %d: expected %s, found %r" % (tok.line, w, tok.text))

    def parse_list(self, stop=()):
        """and-or lists up to a reserved word in stop (or `)`, `;;`, eof)."""
        out = []
        while True:
            self.skip_nl()
            tok = self.peek()
            if tok.kind == "eof":
                return out
            if tok.kind == "word" and tok.text in stop:
                return out
            if tok.kind == "op" and tok.text in (")", ";;", ";&", ";;&"):
                return out
            out.append(self.parse_andor())
            tok = self.peek()
            if tok.kind == "op" and tok.text in (";", "&"):
                out[-1].background = tok.text == "&"
                self.i += 1

    def parse_andor(self):
        a = AndOr()
        a.pipes.append(self.parse_pipeline())
        while self.peek().kind == "op" and self.peek().text in ("&&", "||"):
            a.ops.append(self.next().text)
            self.skip_nl()
            a.pipes.append(self.parse_pipeline())
        return a

    def parse_pipeline(self):
        tok = self.peek()
        neg = False
        while self.at_word("!"):
            neg = not neg
            self.i += 1
        p = Pipeline(tok.line, neg)
        p.cmds.append(self.parse_command())
        while self.peek().kind == "op" and self.peek().text in ("|", "|&"):
            self.i += 1
            self.skip_nl()
            p.cmds.append(self.parse_command())
        return p

    def redirs(self):
        while self.peek().kind == "redir":
            op = self.next().text
            if not re.search(r"&[0-9-]+$", op):
                self.next()

    def parse_command(self):
        tok = self.peek()
        if tok.kind == "op" and tok.text == "(":
            self.i += 1
            c = Cmd("subshell", tok.line)
            c.lists.append(("body", self.parse_list()))
            self.close(")")
            self.redirs()
            return c
        if tok.kind == "word":
            w = tok.text
            if w == "{":
                self.i += 1
                c = Cmd("group", tok.line)
                c.lists.append(("body", self.parse_list(("}",))))
                self.expect_word("}")
                self.redirs()
                return c
            if w == "if":
                self.i += 1
                c = Cmd("if", tok.line)
                while True:
                    c.lists.append(("cond", self.parse_list(("then",))))
                    self.expect_word("then")
                    c.lists.append(("body", self.parse_list(("elif", "else", "fi"))))
                    self.skip_nl()
                    kw = self.next().text
                    if kw == "elif":
                        continue
                    if kw == "else":
                        c.lists.append(("body", self.parse_list(("fi",))))
                        self.expect_word("fi")
                    elif kw != "fi":
                        raise ParseError("line %d: if without fi" % tok.line)
                    break
                self.redirs()
                return c
            if w in ("while", "until"):
                self.i += 1
                c = Cmd("loop", tok.line)
                c.lists.append(("cond", self.parse_list(("do",))))
                self.expect_word("do")
                c.lists.append(("loop", self.parse_list(("done",))))
                self.expect_word("done")
                self.redirs()
                return c
            if w in ("for", "select"):
                self.i += 1
                while not (self.at_word("do") and self.t[self.i - 1].kind in ("nl", "op")):
                    if self.peek().kind == "eof":
                        raise ParseError("line %d: for without do" % tok.line)
                    self.i += 1
                self.expect_word("do")
                c = Cmd("loop", tok.line)
                c.lists.append(("loop", self.parse_list(("done",))))
                self.expect_word("done")
                self.redirs()
                return c
            if w == "case":
                return self.parse_case(tok)
            if w == "[[":
                c = Cmd("simple", tok.line)
                while not self.at_word("]]"):
                    if self.peek().kind == "eof":
                        raise ParseError("line %d: [[ without ]]" % tok.line)
                    c.words.append(self.next())
                c.words.append(self.next())
                self.redirs()
                return c
            if w == "function":
                self.i += 1
                name = self.next().text
                if self.peek().kind == "op" and self.peek().text == "(":
                    self.i += 2
                return self.func_body(name, tok.line)
            nxt = self.t[self.i + 1] if self.i + 1 < len(self.t) else None
            if nxt is not None and nxt.kind == "op" and nxt.text == "(" and re.match(r"^[\w.:-]+$", w):
                self.i += 2
                self.close(")")
                return self.func_body(w, tok.line)
        c = Cmd("simple", tok.line)
        while True:
            tok = self.peek()
            if tok.kind == "redir":
                self.redirs()
            elif tok.kind == "word":
                if not c.words and tok.text in RESERVED_END:
                    raise ParseError("line %d: unexpected %s" % (tok.line, tok.text))
                c.words.append(self.next())
            else:
                break
        if not c.words and self.peek().kind == "op":
            raise ParseError("line %d: unexpected %r" % (self.peek().line, self.peek().text))
        return c

    def func_body(self, name, line):
        self.skip_nl()
        c = Cmd("func", line)
        c.name = name
        body = self.parse_command()
        c.lists.append(("func", [_single(body)]))
        return c

    def parse_case(self, tok):
        self.i += 1
        c = Cmd("case", tok.line)
        self.next()  # the word
        self.expect_word("in")
        while True:
            self.skip_nl()
            if self.at_word("esac"):
                self.i += 1
                break
            if self.peek().kind == "op" and self.peek().text == "(":
                self.i += 1
            while not (self.peek().kind == "op" and self.peek().text == ")"):
                if self.peek().kind == "eof":
                    raise ParseError("line %d: case without esac" % tok.line)
                self.i += 1
            self.i += 1
            c.lists.append(("body", self.parse_list(("esac",))))
            if self.peek().kind == "op" and self.peek().text in (";;", ";&", ";;&"):
                self.i += 1
        self.redirs()
        return c

    def close(self, op):
        self.skip_nl()
        tok = self.next()
        if not (tok.kind == "op" and tok.text == op):
            raise ParseError("line %d: expected %s, found %r" % (tok.line, op, tok.text))


def _single(cmd):
    a = AndOr()
    p = Pipeline(cmd.line, False)
    p.cmds.append(cmd)
    a.pipes.append(p)
    return a


def parse(src, line0=1):
    p = Parser(lex(src, line0))
    out = p.parse_list()
    if p.peek().kind != "eof":
        tok = p.peek()
        raise ParseError("line %d: unexpected %r" % (tok.line, tok.text))
    return out


# --- the checks --------------------------------------------------------------

def _first_word(p):
    c = p.cmds[0]
    return c.words[0].value if c.kind == "simple" and c.words else None


def _guard(p):
    """`[ -s f ] && kill ...`: a test before && is a condition, not an assertion."""
    return len(p.cmds) == 1 and _first_word(p) in ("[", "[[", "test")


def _ends_in_jump(a):
    """`... && break`: the chain is a condition of a jump."""
    return len(a.pipes[-1].cmds) == 1 and _first_word(a.pipes[-1]) in ("break", "continue", "return", "exit")


EARLY_READERS = re.compile(r"^(grep|egrep|fgrep)$")


def _reader_quits_early(cmd):
    if cmd.kind != "simple" or not cmd.words:
        return False
    w = [t.value for t in cmd.words]
    if w[0] == "head":
        return True
    if w[0] == "awk" and any(re.search(r"\bexit\b", a) for a in w[1:]):
        return True
    if EARLY_READERS.match(w[0]):
        for a in w[1:]:
            if a == "--":
                break
            if a in ("--quiet", "--silent") or a.startswith("--max-count"):
                return True
            if re.match(r"^-[A-Za-z]*[qm]", a):
                return True
    return False


def check_scope(lists, where, problems, tail=True):
    """Checks the and-or lists of a scope that runs under errexit; tail:
    whether the status of its last list is the status that counts."""
    for k, a in enumerate(lists):
        last = tail and k == len(lists) - 1 and not a.background
        for j, p in enumerate(a.pipes):
            # its failure is seen: it skips the &&s after it to a || whose
            # right side then runs (`|| exit 1`), or to the end of the scope
            handled = "||" in a.ops[j:]
            live = handled or last
            if (where == "test body" and not live and not p.negated and j < len(a.ops)
                    and not a.background and not _guard(p) and not _ends_in_jump(a)):
                problems.append((p.line, "%s: if this fails, the rest of its && chain is skipped and the body goes on: end the chain here (a new line), or make it the body's last statement" % where))
            if p.negated and not live:
                problems.append((p.line, "%s: `! ...` here asserts nothing under set -e (use refute, or if ...; then ...; false; fi)" % where))
            for m, cmd in enumerate(p.cmds):
                inner_tail = m == len(p.cmds) - 1 and live and not p.negated
                if m > 0 and _reader_quits_early(cmd):
                    problems.append((cmd.line, "%s: `| %s` may stop reading early: under pipefail the writer can fail of SIGPIPE (write to a file, then grep it)" % (where, cmd.words[0].value)))
                # a statement run in the background is no assertion
                check_cmd(cmd, where + " (in the background)" if a.background else where, problems, inner_tail)


def check_substitutions(cmd, where, problems):
    """x=$(a | head -n1): the assignment's status is the pipeline's, so an
    early reader there fails the body too."""
    if cmd.kind != "simple" or not cmd.words:
        return
    if not all(re.match(r"^[A-Za-z_][A-Za-z_0-9]*=", t.text) for t in cmd.words):
        return
    for t in cmd.words:
        i = 0
        while True:
            i = t.text.find("$(", i)
            if i < 0:
                break
            if t.text.startswith("$((", i):
                i += 3
                continue
            j = _skip_nested(t.text, i + 2, ")")
            try:
                inner = parse(t.text[i + 2 : j - 1], t.line + t.text.count("\n", 0, i))
            except (LexError, ParseError):
                inner = []
            sub = []
            check_scope(inner, where + " (in $(...))", sub, False)
            problems.extend(x for x in sub if "stop reading early" in x[1])
            i = j


def check_cmd(cmd, where, problems, tail):
    check_substitutions(cmd, where, problems)
    if cmd.kind == "func":
        check_scope(cmd.lists[0][1], "function %s" % cmd.name, problems, True)
        return
    for role, lists in cmd.lists:
        if role == "cond":
            continue  # a condition: `!` there is meant, errexit is off
        check_scope(lists, where, problems, tail and role == "body")


def bodies(src):
    """(line, body text, literal) of each test_expect_success call in src."""
    toks = lex(src)
    out = []
    for k, tok in enumerate(toks):
        if tok.kind != "word" or tok.text != "test_expect_success":
            continue
        prev = toks[k - 1] if k else None
        if prev is not None and not (prev.kind in ("nl", "op") or prev.text in ("then", "do", "else", "{")):
            continue
        nxt = toks[k + 1 : k + 3]
        if len(nxt) < 2 or any(t.kind != "word" for t in nxt):
            continue  # a definition (test_expect_success() {) or a mention
        body = nxt[1]
        out.append((body.line, body.value, body.text.startswith("'")))
    return out


def lint_text(src, name):
    problems = []
    try:
        top = parse(src)
    except (LexError, ParseError) as e:
        return [(0, "%s: cannot parse: %s" % (name, e))]
    # functions the script defines, wherever (called from the bodies)
    def funcs(lists):
        for a in lists:
            for p in a.pipes:
                for c in p.cmds:
                    if c.kind == "func":
                        check_cmd(c, name, problems, True)
                    else:
                        for _, inner in c.lists:
                            funcs(inner)

    funcs(top)
    for line, body, quoted in bodies(src):
        try:
            lists = parse(body, line)
        except (LexError, ParseError) as e:
            problems.append((line, "test body: cannot parse: %s" % e))
            continue
        check_scope(lists, "test body", problems, True)
    return sorted(set(problems))


def lint_lib(src):
    """lib.sh must run the bodies with errexit and pipefail."""
    m = re.search(r"^\s*\(set -e[^;]*;.*eval \"\$body\"\)", src, re.M)
    if not m or "pipefail" not in m.group(0):
        return [(0, "lib.sh: test_expect_success must run the body under set -e -o pipefail")]
    return []


SELF_TESTS = [
    # (body, expected number of problems)
    ("! grep x f", 0),
    ("a\n! grep x f", 0),
    ("a && ! grep x f", 0),
    ("! grep x f && b", 0),
    ("! grep x f\nb", 1),
    ("a; ! grep x f; b", 1),
    ("a && ! grep x f\nb", 2),
    ("a &&\n    ! grep x f &&\n    b\nc", 2),
    ("a && b\nc", 1),
    ("a &&\n    b\nc", 1),
    ("a && b", 0),
    ("[ -s f ] && kill x\nc", 0),
    ("for i in 1; do a && break; done\nc", 0),
    ("(cd x && y) &\nc", 0),
    ("a && b || { say no; exit 1; }\nc", 0),
    ("if a && b; then c; fi\nd", 0),
    ("! grep x f || exit 1\nb", 0),
    ("! grep x f || { say no; exit 1; }\nb", 0),
    ("for i in 1 2; do\n    ! grep $i f\ndone", 1),
    ("while read l; do ! grep \"$l\" f; done <g\nb", 1),
    ("if ! grep x f; then false; fi\nb", 0),
    ("while ! test -e f; do sleep 1; done\nb", 0),
    ("test ! -e f\nb", 0),
    ("[ ! -e f ]\nb", 0),
    ("[[ ! -e f ]]\nb", 0),
    ("refute grep x f\nb", 0),
    ("x=$(! grep x f)\nb", 0),
    ("echo '! grep x f'\nb", 0),
    ("cat <<EOF\n! grep x f\nEOF\nb", 0),
    ("cat <<-\\EOF\n\t! grep x f\n\tEOF\nb", 0),
    ("f() {\n    ! grep x \"$1\"\n}\nf a\nb", 0),
    ("f() {\n    ! grep x \"$1\"\n    true\n}\nf a", 1),
    ("{ ! a || b; }\nc", 0),
    ("{ a; ! b; }\nc", 1),
    ("( ! b )\nc", 1),
    ("case $x in a) ! grep x f ;; esac\nb", 1),
    ("expect_code 1 a || ! b | grep -q c\nd", 2),
    ("a && ! b && c || { cat f; exit 1; }\nd", 0),
    ("! b && c || exit 1\nd", 0),
    ("\"$SPOTRUN\" ls | grep -q r\nb", 1),
    ("\"$SPOTRUN\" ls | grep -Eq r\nb", 1),
    ("\"$SPOTRUN\" ls | grep -m1 r", 1),
    ("\"$SPOTRUN\" ls | head -n 1", 1),
    ("\"$SPOTRUN\" ls | grep r >/dev/null", 0),
    ("grep -q r f && grep -c x f | tail -1", 0),
    ("a 2>&1 | grep -q x", 1),
    ("x=$(\"$SPOTRUN\" ls | head -n1)\nb", 1),
    ("x=$(ldconfig -p | awk 1)\nb", 0),
    ("x=$(ldconfig -p | awk \"{print; exit}\")\nb", 1),
    ("echo \"$(a | head -n1)\"", 0),
    ("echo $((1 << 20)) >f\n! grep x f\nb", 1),
    ("diff <(sort a) <(sort b)\n! grep x f\nb", 1),
    ("a=(x \"y z\")\nb+=(w)\n! grep x f\nc", 1),
    ("case $x in (a|b) c ;; *) d ;;& e) ! f ;; esac\ng", 1),
    ("[[ $x =~ ^(a|b)$ ]] && y\n! grep x f\nc", 1),
]


def self_test():
    bad = 0
    for body, want in SELF_TESTS:
        src = "test_expect_success 't' '%s'\n" % body.replace("'", "'\"'\"'")
        got = lint_text(src, "self-test")
        if len(got) != want:
            bad += 1
            print("self-test: %r: want %d problems, got %d: %s" % (body, want, len(got), got))
    # a body spread over lines after other code, and a quote spliced in
    src = "x=1\ncat >f <<EOF\nit's\nEOF\ntest_expect_success 'a' '\n    a\n    ! grep \"'\"'\"'x'\"'\"'\" f\n    b\n'\n"
    got = lint_text(src, "s")
    if [ln for ln, _ in got] != [7]:
        bad += 1
        print("self-test: multi-line body: want a problem at line 7, got %s" % got)
    # a body given inside a function, or in a loop
    src = "t() {\n    test_expect_success \"t $1\" '\n        ! a\n        b\n    '\n}\nfor x in 1; do test_expect_success t '! a; b'; done\n"
    got = lint_text(src, "s")
    if [ln for ln, _ in got] != [3, 7]:
        bad += 1
        print("self-test: bodies in a function and a loop: want problems at lines 3 and 7, got %s" % got)
    if lint_lib("(set -e; eval \"$body\") >out") == []:
        bad += 1
        print("self-test: lib.sh without pipefail passes")
    if lint_lib("(set -e -o pipefail; trap x ERR; eval \"$body\") >out") != []:
        bad += 1
        print("self-test: lib.sh with pipefail fails")
    print("self-test: %d of %d cases wrong" % (bad, len(SELF_TESTS) + 4))
    return 1 if bad else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    n = 0
    for path in argv[1:]:
        src = open(path, encoding="utf-8").read()
        lines = src.split("\n")
        # a line may say that it reads early on purpose: `# testlint: ok`
        probs = [(ln, what) for ln, what in lint_text(src, path)
                 if not (0 < ln <= len(lines) and "testlint: ok" in lines[ln - 1])]
        if path.endswith("/lib.sh") or path == "lib.sh":
            probs += lint_lib(src)
        for line, what in probs:
            print("%s:%d: %s" % (path, line, what))
            n += 1
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
