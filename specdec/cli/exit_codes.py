"""Every exit status of the ``specdec`` command, one meaning each (the README's table).

* ``OK`` (0): no check rejected - every subject PASS, or INCONCLUSIVE where the run was weaker than
  asked (the summary line says which); ``bench gate``: no regression; other commands: done.
* ``FAIL`` (1): a check rejected (a subject FAILs); ``bench gate``: a ratio regressed (a goodput
  that fell to 0 included), an exact metric changed, or a metric the baseline had was dropped - also
  when every metric was.
* ``USAGE`` (2): a bad argument, refused in one line before any work ran.
* ``ERROR`` (3): a subject misbehaved - it raised, hung past ``--call-timeout``, or returned what its
  Protocol does not allow; the report (JSON included) says which subject, which call and the
  exception's last line, and there is no verdict on its law.  ``bench run``: a benchmark raised
  (pytest's output names it).  ``bench load``: a side broke its streaming Protocol (a server that
  ignored ``"stream": true``) or every request of a side failed; the first error is shown and
  nothing is stored.
* ``NO_VERDICT`` (4): ``bench gate`` / ``bench plot`` had nothing to judge or draw: an empty run, no
  shared benchmark, no ratio, or a file that cannot be read (the message names the file).
* ``INTERRUPTED`` (130): stopped by Ctrl-C or SIGTERM; a partial report is written and marked so.

A FAIL outranks an ERROR of another subject in one run (a rejected check is evidence; an error is
not), and both outrank PASS.
"""

OK = 0
FAIL = 1
USAGE = 2
ERROR = 3
NO_VERDICT = 4
INTERRUPTED = 130

TABLE = [
    (OK, "no check rejected: PASS, or INCONCLUSIVE (weaker than asked); bench gate: no regression"),
    (FAIL, "a check rejected (FAIL); bench gate: a regression, a changed exact metric or a dropped metric"),
    (USAGE, "a bad argument, refused before any work"),
    (ERROR, "a subject raised, hung past --call-timeout, or broke its Protocol (verdict ERROR); bench run: a benchmark raised; "
            "bench load: a side broke its streaming Protocol or all its requests failed"),
    (NO_VERDICT, "bench gate / plot: nothing to judge, or an unreadable input file"),
    (INTERRUPTED, "interrupted (Ctrl-C, SIGTERM): the partial report is written and marked"),
]
